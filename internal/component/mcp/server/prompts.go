package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompt is one prompt a server offers; pkg/app builds them from `prompts:`.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
	// Get renders the messages for args. Required arguments are checked before it
	// is called. An error wrapping ErrInvalidPromptArguments is the client's
	// mistake (invalid params); any other is an internal error.
	Get func(ctx context.Context, args map[string]string) ([]*sdk.PromptMessage, error)
	// Complete answers completion/complete for the arguments (nil: no suggestions).
	Complete CompleteFunc
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// ErrInvalidPromptArguments is wrapped by Prompt.Get errors caused by the
// arguments the client sent.
var ErrInvalidPromptArguments = errors.New("invalid prompt arguments")

// PromptInfo describes a prompt of a server, for listings.
type PromptInfo struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

func promptInfos(ps []*Prompt) []PromptInfo {
	out := make([]PromptInfo, 0, len(ps))
	for _, p := range ps {
		if p != nil {
			out = append(out, PromptInfo{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: p.Arguments})
		}
	}
	return out
}

func addPrompts(s *sdk.Server, ps []*Prompt, allowed func(context.Context, string) error, logger *slog.Logger) {
	for _, p := range ps {
		if p == nil {
			continue
		}
		sp := &sdk.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			sp.Arguments = append(sp.Arguments, &sdk.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		s.AddPrompt(sp, promptHandler(p, allowed, logger))
	}
}

func promptHandler(p *Prompt, allowed func(context.Context, string) error, logger *slog.Logger) sdk.PromptHandler {
	return func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		if allowed != nil {
			if err := allowed(withCallerToken(ctx, req), p.Name); err != nil {
				logger.Info("mcp prompt refused", "prompt", p.Name, "reason", err)
				// The answer of a prompt that does not exist, as the go-sdk gives it.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", p.Name)}
			}
		}
		args := req.Params.Arguments
		if args == nil {
			args = map[string]string{}
		}
		var missing []string
		for _, a := range p.Arguments {
			if _, ok := args[a.Name]; a.Required && !ok {
				missing = append(missing, a.Name)
			}
		}
		if len(missing) > 0 {
			word := "argument"
			if len(missing) > 1 {
				word = "arguments"
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("prompt %q: missing required %s %s", p.Name, word, strings.Join(missing, ", "))}
		}
		msgs, err := p.Get(ctx, args)
		// MCP 2026-07-28: a prompt whose workflow asks the client is answered
		// with the questions (inputrequired.go).
		if res, asked, ierr := finishInputPrompt(ctx); asked {
			return res, ierr
		}
		if errors.Is(err, ErrInvalidPromptArguments) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %q: %v", p.Name, err)}
		}
		if err != nil {
			logger.Warn("mcp prompt failed", "prompt", p.Name, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("prompt %q could not be rendered", p.Name)}
		}
		if msgs == nil {
			msgs = []*sdk.PromptMessage{}
		}
		return &sdk.GetPromptResult{Description: p.Description, Messages: msgs}, nil
	}
}
