package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxCompletionValues is the most values one completion/complete answer carries
// (the protocol's limit).
const MaxCompletionValues = 100

// Completion is the answer of a CompleteFunc. Total, when larger than
// len(Values), is how many values there are in all.
type Completion struct {
	Values  []string
	Total   int
	HasMore bool
}

// CompleteFunc suggests values for argument (a prompt argument or a template
// variable) given what the user typed so far (value) and the arguments already
// chosen (context).
type CompleteFunc func(ctx context.Context, argument, value string, context map[string]string) (Completion, error)

// StaticCompletions completes from fixed lists of values per argument: those that
// start with what was typed (case-insensitively), in the order written.
func StaticCompletions(lists map[string][]string) CompleteFunc {
	return func(_ context.Context, argument, value string, _ map[string]string) (Completion, error) {
		prefix := strings.ToLower(value)
		var out []string
		for _, v := range lists[argument] {
			if strings.HasPrefix(strings.ToLower(v), prefix) {
				out = append(out, v)
			}
		}
		return Completion{Values: out}, nil
	}
}

// completionHandler answers completion/complete for the server's prompts and
// resource templates. References to things the server does not offer (or hides
// from the caller) are invalid params; arguments without completions get an empty
// list, as the protocol allows.
func completionHandler(prompts []*Prompt, set *resourceSet, allowed func(context.Context, string) error, logger *slog.Logger) func(context.Context, *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	byName := make(map[string]*Prompt, len(prompts))
	for _, p := range prompts {
		if p != nil {
			byName[p.Name] = p
		}
	}
	return func(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
		ref := req.Params.Ref
		var complete CompleteFunc
		var name string
		switch ref.Type {
		case "ref/prompt":
			p := byName[ref.Name]
			if p == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
			}
			complete, name = p.Complete, p.Name
		case "ref/resource":
			t := set.template(ref.URI)
			if t == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q", ref.URI)}
			}
			complete, name = t.Complete, t.Name
		}
		if allowed != nil && allowed(withCallerToken(ctx, req), name) != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown %s %q", strings.TrimPrefix(ref.Type, "ref/"), ref.Name+ref.URI)}
		}
		res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}
		if complete == nil {
			return res, nil
		}
		var argCtx map[string]string
		if req.Params.Context != nil {
			argCtx = req.Params.Context.Arguments
		}
		c, err := complete(ctx, req.Params.Argument.Name, req.Params.Argument.Value, argCtx)
		if err != nil {
			logger.Warn("mcp completion failed", "ref", ref.Name+ref.URI, "argument", req.Params.Argument.Name, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "completion failed"}
		}
		res.Completion = limitCompletion(c)
		return res, nil
	}
}

// limitCompletion caps the values at MaxCompletionValues and fills total and
// hasMore accordingly.
func limitCompletion(c Completion) sdk.CompletionResultDetails {
	total := max(c.Total, len(c.Values))
	vals := c.Values
	if vals == nil {
		vals = []string{}
	}
	hasMore := c.HasMore
	if len(vals) > MaxCompletionValues {
		vals, hasMore = vals[:MaxCompletionValues], true
	}
	if total > len(vals) {
		hasMore = true
	}
	out := sdk.CompletionResultDetails{Values: vals, HasMore: hasMore}
	if hasMore || total != len(vals) {
		out.Total = total
	} else {
		out.Total = len(vals)
	}
	return out
}
