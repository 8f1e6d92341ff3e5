package client

import (
	"context"
	"fmt"
	"iter"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The requests beyond tools that helix mcp inspect, read and prompt make: the
// server's initialize result, its resources, resource templates and prompts, and
// resources/read and prompts/get. They are all safe to send again on a new session,
// so a lost session is re-opened once as for ListTools.

// RequestError is a JSON-RPC error the server answered a request with (an unknown
// resource or prompt, missing prompt arguments): the server's answer, not a
// transport failure.
type RequestError struct {
	Method  string
	Code    int64
	Message string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("%s: server error %d: %s", e.Method, e.Code, e.Message)
}

// InitializeResult opens the session when needed and returns what the server said
// about itself at initialize: serverInfo, protocolVersion, capabilities,
// instructions.
func (c *Conn) InitializeResult(ctx context.Context) (*sdk.InitializeResult, error) {
	var res *sdk.InitializeResult
	err := c.request(ctx, "initialize", func(ctx context.Context, s *sdk.ClientSession) error {
		res = s.InitializeResult()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &sdk.InitializeResult{}
	}
	return res, nil
}

// ListResources lists the server's resources (all pages).
func (c *Conn) ListResources(ctx context.Context) ([]*sdk.Resource, error) {
	return listAll(ctx, c, "resources/list", func(ctx context.Context, s *sdk.ClientSession) iter.Seq2[*sdk.Resource, error] {
		return s.Resources(ctx, nil)
	})
}

// ListResourceTemplates lists the server's resource templates (all pages).
func (c *Conn) ListResourceTemplates(ctx context.Context) ([]*sdk.ResourceTemplate, error) {
	return listAll(ctx, c, "resources/templates/list", func(ctx context.Context, s *sdk.ClientSession) iter.Seq2[*sdk.ResourceTemplate, error] {
		return s.ResourceTemplates(ctx, nil)
	})
}

// ListPrompts lists the server's prompts (all pages).
func (c *Conn) ListPrompts(ctx context.Context) ([]*sdk.Prompt, error) {
	return listAll(ctx, c, "prompts/list", func(ctx context.Context, s *sdk.ClientSession) iter.Seq2[*sdk.Prompt, error] {
		return s.Prompts(ctx, nil)
	})
}

// ReadResource reads the resource at uri (resources/read).
func (c *Conn) ReadResource(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	var res *sdk.ReadResourceResult
	err := c.request(ctx, "resources/read "+uri, func(ctx context.Context, s *sdk.ClientSession) error {
		var err error
		res, err = s.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		return err
	})
	return res, err
}

// GetPrompt gets prompt name with args (prompts/get).
func (c *Conn) GetPrompt(ctx context.Context, name string, args map[string]string) (*sdk.GetPromptResult, error) {
	var res *sdk.GetPromptResult
	err := c.request(ctx, "prompts/get "+name, func(ctx context.Context, s *sdk.ClientSession) error {
		var err error
		res, err = s.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
		return err
	})
	return res, err
}

// listAll collects every page of a list request.
func listAll[T any](ctx context.Context, c *Conn, method string, list func(context.Context, *sdk.ClientSession) iter.Seq2[T, error]) ([]T, error) {
	var out []T
	err := c.request(ctx, method, func(ctx context.Context, s *sdk.ClientSession) error {
		out = out[:0]
		for item, err := range list(ctx, s) {
			if err != nil {
				return err
			}
			out = append(out, item)
		}
		return nil
	})
	return out, err
}

// request runs f, an idempotent request named method, on the session within the
// call timeout. A JSON-RPC error the server answered becomes a *RequestError.
func (c *Conn) request(ctx context.Context, method string, f func(context.Context, *sdk.ClientSession) error) error {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	tr, err := c.withSession(ctx, true, f)
	if err == nil {
		return nil
	}
	if tl := tr.responseTooLarge(); tl != nil {
		return fmt.Errorf("%s: %w", method, tl)
	}
	if we := tr.serverAnswer(); we != nil {
		return &RequestError{Method: method, Code: we.Code, Message: we.Message}
	}
	if we := protocolError(err); we != nil {
		return &RequestError{Method: method, Code: we.Code, Message: we.Message}
	}
	return fmt.Errorf("%s on %s: %w", method, c.cfg.target(), c.streamLimit.explain(err))
}
