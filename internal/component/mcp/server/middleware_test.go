package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReceivingMiddlewareRunsOnTheFastPath: receiving middleware registered for a
// server (Options.ReceivingMiddleware, go-sdk receiving middleware) sees
// every tools/call — also those the fast path answers — and what it decides
// (here: refusing one tool, renaming another) holds on both paths alike.
func TestReceivingMiddlewareRunsOnTheFastPath(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	mw := func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			calls.Add(1)
			cr := req.(*sdk.CallToolRequest)
			if cr.Extra == nil || cr.Extra.Header.Get("Authorization") != "Bearer plain" {
				return nil, &jsonrpc.Error{Code: -32001, Message: "no request headers"}
			}
			switch cr.Params.Name {
			case "fails":
				return nil, &jsonrpc.Error{Code: -32001, Message: "refused by middleware"}
			case "hello":
				cr.Params.Name = "greet"
			}
			return next(ctx, method, req)
		}
	}
	hc := newTestContext(t, fastWorkflows(newSlowProbe())...)
	var opts []Options
	for _, id := range []string{"fast", "sdk", "fast-stateless"} {
		opts = append(opts, Options{ID: id, Addr: "127.0.0.1:0", DisableFastToolCalls: id == "sdk",
			Stateless: id == "fast-stateless", ReceivingMiddleware: []sdk.Middleware{mw}})
	}
	comp := startContext(t, hc, opts...)
	var answers [3][]decodedReply
	for i, id := range []string{"fast", "sdk", "fast-stateless"} {
		url := serverURL(t, comp, id, "/mcp")
		hdr := map[string]string{"Authorization": "Bearer plain"}
		if id != "fast-stateless" {
			hdr = sessionFor(t, url)
		}
		calls.Store(0)
		before := fastServed(comp, id)
		for _, body := range []string{call(1, "greet", `{"name":"Ada"}`), call(2, "fails", `{}`), call(3, "hello", `{"name":"Bo"}`)} {
			answers[i] = append(answers[i], decodeReply(t, send(t, http.MethodPost, url, hdr, body)))
		}
		if got := calls.Load(); got != 3 {
			t.Errorf("%s: the middleware saw %d tool calls, want 3", id, got)
		}
		if got, want := fastServed(comp, id)-before, map[string]uint64{"fast": 3, "sdk": 0, "fast-stateless": 3}[id]; got != want {
			t.Errorf("%s: the fast path answered %d calls, want %d", id, got, want)
		}
		wantTool("Hello, Ada!", false)(t, answers[i][0])
		if code, msg := rpcError(t, answers[i][1]); code != -32001 || msg != "refused by middleware" {
			t.Errorf("%s: refusal %v %q", id, code, msg)
		}
		wantTool("Hello, Bo!", false)(t, answers[i][2])
	}
	for i := range answers[0] {
		if a, b := answers[0][i], answers[1][i]; a.Status != b.Status || a.ContentType != b.ContentType {
			t.Errorf("answer %d differs: fast %+v, sdk %+v", i, a, b)
		}
	}
}
