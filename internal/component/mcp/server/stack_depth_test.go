package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// A keep-alive connection's requests run on the goroutine net/http started for
// it, and that goroutine's stack stays at the size the deepest request took it
// to: with a thousand connections, 8 KiB against 16 KiB each is most of the
// difference between meeting the memory goal and not (BENCHMARKS.md, "Memory at
// scale"). These constants are what that stack holds besides the handler.
const (
	// connStack is the stack a connection's goroutine keeps: what the guard's
	// reserve grows it to (internal/netguard/stack.go).
	connStack = 8 << 10
	// belowHandler is what net/http (conn.serve, with its 1 KiB frame, and
	// serverHandler) keeps on that stack below the server's handler, which
	// begins with Helix's connection guard.
	belowHandler = 1152
)

// TestKeepAliveCallFitsInAConnectionStack runs a keep-alive tools/call of the
// echo tool (bench/echo.yaml: a declared input and a Starlang step) through the
// server's real handler on a goroutine whose stack is connStack, with
// belowHandler bytes of it in use below the handler, and checks that the
// runtime did not have to grow the stack: a later change that makes the call's
// deepest point deeper fails it. (A grown stack is seen as a local variable
// whose address changed.)
func TestKeepAliveCallFitsInAConnectionStack(t *testing.T) {
	if mcpserver.RaceBuild {
		t.Skip("the race detector's instrumentation makes frames larger and stacks start larger; the budget is the plain build's")
	}
	call := stackCall(t, echoHandler(t))
	call(0) // the first call sets up what later calls reuse (pools, caches)

	// Collections shrink stacks (a copy too): none during the measurement.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if !runsWithin(0, func() {}) || runsWithin(connStack, func() {}) {
		t.Skip("this runtime does not start goroutines with a stack smaller than connStack: nothing to measure")
	}
	if !call(belowHandler) {
		// How much deeper, for the message.
		pad := belowHandler
		for pad >= 0 && !call(pad) {
			pad -= 64
		}
		t.Fatalf("a keep-alive tools/call grew a %d-byte stack with %d bytes below the handler; it fits with %d: "+
			"the call's path is about %d bytes deeper than a connection's stack holds (see BENCHMARKS.md, \"Memory at scale\")",
			connStack, belowHandler, pad, belowHandler-pad)
	}
	room := belowHandler
	for room < connStack && call(room+64) {
		room += 64
	}
	t.Logf("a keep-alive tools/call fits in %d bytes of stack with %d bytes below the handler (%d needed)", connStack, room, belowHandler)
}

// echoHandler serves echoToolYAML's echo tool statefully and returns the
// handler of its HTTP server.
func echoHandler(t *testing.T) http.Handler {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", fmt.Appendf(nil, echoToolYAML, ""))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, app.Options{Logger: discardLogger(), ManagementAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop(ctx) })
	c, _ := a.Context().Component(mcpserver.Scheme)
	h := c.(*mcpserver.Component).HTTPHandler("bench")
	if h == nil {
		t.Fatal("the server has no HTTP handler")
	}
	return h
}

// stackCall opens a session on h and returns a function that makes one
// tools/call in it, as a keep-alive client's request, with pad bytes of stack
// below the handler (runsWithin), and reports whether the call fitted.
func stackCall(t *testing.T, h http.Handler) func(pad int) bool {
	t.Helper()
	var sess string
	request := func(method, body string) (*http.Request, *httptest.ResponseRecorder) {
		req := httptest.NewRequest(method, "http://127.0.0.1/mcp", strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sess != "" {
			req.Header.Set("Mcp-Session-Id", sess)
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		}
		return req, httptest.NewRecorder()
	}
	post := func(body string) *httptest.ResponseRecorder {
		req, rec := request(http.MethodPost, body)
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if sess = rec.Header().Get("Mcp-Session-Id"); rec.Code != http.StatusOK || sess == "" {
		t.Fatalf("initialize: %d %q", rec.Code, rec.Body)
	}
	if rec := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); rec.Code != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", rec.Code, rec.Body)
	}
	t.Cleanup(func() {
		req, rec := request(http.MethodDelete, "")
		h.ServeHTTP(rec, req)
	})
	return func(pad int) bool {
		// The request is made before: only the handler runs on the measured stack.
		req, rec := request(http.MethodPost, echoCall)
		fits := runsWithin(pad, func() { h.ServeHTTP(rec, req) })
		if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, "hello") || strings.Contains(body, `"isError":true`) {
			t.Fatalf("tools/call: %d %q", rec.Code, body)
		}
		return fits
	}
}

// runsWithin reports whether f runs without the runtime growing the stack of
// a goroutine whose stack is connStack, with pad bytes of it in use below f
// (counted from the goroutine's first frame, give or take one frame).
func runsWithin(pad int, f func()) bool {
	done := make(chan bool)
	go func() {
		_ = growStack(0) // 2 KiB → connStack, in one step
		var marker byte
		top := uintptr(unsafe.Pointer(&marker))
		_ = padStack(top, pad, connStack/16, f)
		done <- uintptr(unsafe.Pointer(&marker)) == top
	}()
	return <-done
}

// growStack's frame makes the runtime grow a new goroutine's stack to
// connStack: more than half of it, less than all of it with the runtime's
// guard.
//
//go:noinline
func growStack(i int) byte {
	var frame [connStack * 5 / 8]byte
	return frame[i&(len(frame)-1)]
}

// padStack calls itself until pad bytes of stack lie between top and its
// frame (or levels run out: after a move of the stack, top is stale), then
// calls f.
//
//go:noinline
func padStack(top uintptr, pad, levels int, f func()) byte {
	var frame [32]byte
	if used := int(top - uintptr(unsafe.Pointer(&frame[0]))); used < pad && levels > 0 {
		return padStack(top, pad, levels-1, f) + frame[pad&15]
	}
	f()
	return frame[pad&15]
}
