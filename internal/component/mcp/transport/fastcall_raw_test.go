package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawResults are results as a go-sdk server encodes them: what a gateway
// relays from such an upstream.
var rawResults = []*sdk.CallToolResult{
	{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}},
	{Content: []sdk.Content{&sdk.TextContent{Text: awkward}}, IsError: true},
	{Content: []sdk.Content{}, StructuredContent: map[string]any{"<k>": []any{1.5, "&", nil}}, Meta: sdk.Meta{"m": "v"}},
}

// resultServer serves the tool "t", which answers rawResults[i] for the call
// with arguments {"i":i}.
func resultServer(t *testing.T) *sdk.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "raw", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ I int }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return rawResults[in.I], nil
		})
	return srv
}

// TestRawResultAnswersAsTheSDK: a result the raw hook answers with, encoded as
// the go-sdk encodes it, reaches the client byte for byte as the go-sdk path
// answers the same result, as JSON and as an event stream.
func TestRawResultAnswersAsTheSDK(t *testing.T) {
	t.Parallel()
	sdkURL := rawServer(t, resultServer(t), Options{})
	fast := NewFastToolCalls(func(context.Context, *http.Request, *ToolCall) (*sdk.CallToolResult, error) {
		t.Error("CallTool ran for a call the raw hook answered")
		return nil, nil
	}, nil)
	fast.AnswerRaw(func(_ context.Context, _ *http.Request, call *ToolCall) (json.RawMessage, bool, error) {
		var in struct{ I int }
		if err := json.Unmarshal(call.Args, &in); err != nil {
			return nil, true, err
		}
		res, err := rawResults[in.I].MarshalJSON()
		return res, true, err
	})
	rawURL := rawServer(t, resultServer(t), Options{Fast: fast})
	sdkSession, rawSession := initSession(t, sdkURL), initSession(t, rawURL)
	for i := range rawResults {
		body := `{"jsonrpc":"2.0","id":"x<` + string(rune('0'+i)) + `>","method":"tools/call","params":{"name":"t","arguments":{"i":` + string(rune('0'+i)) + `}}}`
		for _, accept := range []string{"application/json, text/event-stream", "text/event-stream"} {
			want := send(t, http.MethodPost, sdkURL, map[string]string{"Mcp-Session-Id": sdkSession, "Accept": accept}, body)
			served := fast.Served()
			got := send(t, http.MethodPost, rawURL, map[string]string{"Mcp-Session-Id": rawSession, "Accept": accept}, body)
			if fast.Served() != served+1 {
				t.Fatalf("result %d (%s): the fast path did not answer", i, accept)
			}
			if got.status != want.status || got.header.Get("Content-Type") != want.header.Get("Content-Type") || got.body != want.body {
				t.Errorf("result %d (%s):\n raw %d %s %s\n sdk %d %s %s", i, accept,
					got.status, got.header.Get("Content-Type"), got.body, want.status, want.header.Get("Content-Type"), want.body)
			}
		}
	}
}

// TestRawHookDeclines: a call the raw hook does not take goes on to CallTool;
// an error it returns is the JSON-RPC error; a 2026-07-28 call and a fast path
// with middleware never reach it.
func TestRawHookDeclines(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	newFast := func(mw []sdk.Middleware) *FastToolCalls {
		f := NewFastToolCalls(func(_ context.Context, _ *http.Request, call *ToolCall) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "decoded " + string(call.Args)}}}, nil
		}, mw)
		f.AnswerRaw(func(_ context.Context, _ *http.Request, call *ToolCall) (json.RawMessage, bool, error) {
			asked.Add(1)
			switch string(call.Args) {
			case `{"fail":true}`:
				return nil, true, &jsonrpc.Error{Code: -32001, Message: "upstream refused"}
			case `{"raw":true}`:
				return json.RawMessage(`{"content":[]}`), true, nil
			}
			return nil, false, nil
		})
		return f
	}
	url := rawServer(t, resultServer(t), Options{Fast: newFast(nil)})
	h := map[string]string{"Mcp-Session-Id": initSession(t, url)}
	call := func(args string) string {
		return send(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":`+args+`}}`).body
	}
	if got := call(`{"other":1}`); got != `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"decoded {\"other\":1}"}]}}` {
		t.Errorf("declined call: %s", got)
	}
	if got := call(`{"fail":true}`); got != `{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"upstream refused"}}` {
		t.Errorf("refused call: %s", got)
	}
	if got := call(`{"raw":true}`); got != `{"jsonrpc":"2.0","id":3,"result":{"content":[]}}` {
		t.Errorf("raw call: %s", got)
	}
	if asked.Load() != 3 {
		t.Fatalf("the hook was asked %d times, want 3", asked.Load())
	}

	// Middleware sees decoded results: with it the hook is not asked.
	passOn := func(next sdk.MethodHandler) sdk.MethodHandler { return next }
	url = rawServer(t, resultServer(t), Options{Fast: newFast([]sdk.Middleware{passOn})})
	h = map[string]string{"Mcp-Session-Id": initSession(t, url)}
	if got := call(`{"raw":true}`); got != `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"decoded {\"raw\":true}"}]}}` {
		t.Errorf("call through middleware: %s", got)
	}
	if asked.Load() != 3 {
		t.Fatalf("the hook was asked with middleware present")
	}

	// A 2026-07-28 result names the server in _meta: the raw hook is not asked.
	f := newFast(nil)
	f.AnswerNewEra(&sdk.Implementation{Name: "raw", Version: "1"})
	fc := &fastCall{ToolCall: ToolCall{Name: "t", Args: json.RawMessage(`{"raw":true}`), ProtocolVersion: statelessProtocol}}
	if _, ok := f.runRaw(context.Background(), nil, fc); ok || asked.Load() != 3 {
		t.Fatalf("a 2026-07-28 call reached the raw hook")
	}
}
