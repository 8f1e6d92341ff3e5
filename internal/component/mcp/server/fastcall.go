package server

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// fastCaller is the server's side of the tools/call fast path of Helix's
// Streamable HTTP transport (transport/fastcall.go): the transport decodes a plain
// tools/call itself and calls [fastCaller.call], which does what the go-sdk's
// tools/call handling does after the receiving middleware: find the tool, ask
// ToolAllowed, run it through the same toolCaller.call the go-sdk handler uses.
type fastCaller struct {
	caller *toolCaller
	tools  map[string]*serverTool // by tool name and by alias (workflow id)
	ext    *ExtensionHost         // the extension's tools (gateway.go); nil: none
}

func newFastCaller(caller *toolCaller, tools []*serverTool) *fastCaller {
	f := &fastCaller{caller: caller, tools: make(map[string]*serverTool, len(tools))}
	for _, t := range tools {
		f.tools[t.info.Name] = t
	}
	// A workflow id is an alias of its tool name in tools/call (toolAliases).
	for alias, name := range toolAliases(tools) {
		f.tools[alias] = f.tools[name]
	}
	return f
}

// call is a [transport.CallTool].
func (f *fastCaller) call(ctx context.Context, r *http.Request, tc *transport.ToolCall) (*sdk.CallToolResult, error) {
	t := f.tools[tc.Name]
	if t == nil {
		if f.ext != nil {
			if h, ok := f.ext.tool(tc.Name); ok {
				return f.ext.callFast(ctx, r, tc, h)
			}
		}
		return nil, unknownToolError(tc.Name)
	}
	// ToolAllowed finds the caller's token in ctx, as withCallerToken puts it there
	// on the SDK path.
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		ctx = security.WithTokenInfo(ctx, ti)
	}
	// A refused tool answers like an unknown one, as on the SDK path.
	if err := f.caller.refusal(ctx, t, tc.Name); err != nil {
		return nil, err
	}
	if f.caller.tracer != nil {
		// The span the SDK path's handler starts: the same parent (_meta's trace
		// context, else the traceparent header) and the same session attributes.
		ctx, span := f.caller.startCallSpan(ctx, t.info.Name, tc.CallMeta(), r.Header, tc.Session, tc.ProtocolVersion)
		res := f.caller.call(ctx, t, tc.Args)
		endCallSpan(span, res)
		return res, nil
	}
	return f.caller.call(ctx, t, tc.Args), nil
}
