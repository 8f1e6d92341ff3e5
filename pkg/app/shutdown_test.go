package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

func shutdownYAML(g *blocker, timeout string) string {
	return `
helix:
  shutdown_timeout: ` + timeout + `
  mcp:
    servers:
      - enabled: true
        name: fastpath
        addr: 127.0.0.1:0
      - enabled: true
        name: sdkpath
        addr: 127.0.0.1:0
        fast_tool_calls: false
workflows:
  - id: slow
    trigger: direct://slow
    steps:
      - target: ` + g.srv.URL + `/slow?httpMethod=GET
  - id: quick
    trigger: direct://quick
    steps:
      - set-body: quick
`
}

func readyz(t *testing.T, a *app.App) (int, string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + a.ManagementAddr() + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// sdSession is a client with the go-sdk's default reconnection: when the server
// closes the session at the end of Stop, the standalone stream ends; a client
// allowed no retry would fail the session at once, racing the answer of the call
// that just completed.
func sdSession(t *testing.T, a *app.App, id string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "shutdown-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: serverURL(t, a, id) + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type sdResult struct {
	text    string
	isError bool
	err     error
}

func sdCall(cs *sdk.ClientSession, tool string) sdResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return sdResult{err: err}
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	return sdResult{text: text, isError: res.IsError}
}

// Stopping Helix: /readyz says "stopping" first; then new tools/call get the
// JSON-RPC error "server is shutting down" (on the fast path and the go-sdk
// path), new sessions get 503, and the call already running completes.
func TestStopDrainsInFlightCallsAndRefusesNewOnes(t *testing.T) {
	t.Parallel()
	g := newBlocker(t)
	a, err := buildYAML(t, shutdownYAML(g, "20s"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var stopOnce sync.Once
	stopErr := make(chan error, 1)
	stop := func() { stopOnce.Do(func() { go func() { stopErr <- a.Stop(context.Background()) }() }) }
	t.Cleanup(func() { g.open(); stop(); <-stopErr })

	fast, slowPath := sdSession(t, a, "fastpath"), sdSession(t, a, "sdkpath")
	fastURL, sdkURL := serverURL(t, a, "fastpath"), serverURL(t, a, "sdkpath")
	for _, cs := range []*sdk.ClientSession{fast, slowPath} {
		if r := sdCall(cs, "quick"); r.err != nil || r.isError || r.text != "quick" {
			t.Fatalf("before stop: %+v", r)
		}
	}
	if code, body := readyz(t, a); code != 200 {
		t.Fatalf("/readyz before stop: %d %s", code, body)
	}

	inflight := make(chan sdResult, 1)
	go func() { inflight <- sdCall(fast, "slow") }()
	g.waitEntered(t)
	stop()

	// Every refusal must come after /readyz already said "stopping".
	for name, cs := range map[string]*sdk.ClientSession{"fast path": fast, "sdk path": slowPath} {
		deadline := time.Now().Add(testtools.StartupBound)
		for {
			r := sdCall(cs, "quick")
			if r.err != nil {
				if !strings.Contains(r.err.Error(), "server is shutting down") {
					t.Fatalf("%s: new call during stop failed with %v, want the JSON-RPC error \"server is shutting down\"", name, r.err)
				}
				if code, body := readyz(t, a); code != http.StatusServiceUnavailable || !strings.Contains(body, "stopping") {
					t.Fatalf("%s: a call was refused while /readyz answered %d %q", name, code, body)
				}
				break
			}
			if r.isError {
				t.Fatalf("%s: new call during stop answered isError %q, want a JSON-RPC error", name, r.text)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: new tools/call still served while Helix stops: %+v", name, r)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// New sessions: Streamable HTTP initialize and SSE GET get 503.
	rc := newRawClient(t)
	for _, base := range []string{fastURL, sdkURL} {
		resp, body := rc.post(base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`,
			"Accept", "application/json, text/event-stream")
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "server is shutting down") {
			t.Fatalf("%s: initialize during stop answered %d %s, want 503", base, resp.StatusCode, body)
		}
		resp, body = rc.do(http.MethodGet, base+"/sse", nil, "Accept", "text/event-stream")
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s: new SSE session during stop answered %d %s, want 503", base, resp.StatusCode, body)
		}
	}

	select {
	case err := <-stopErr:
		t.Fatalf("Stop returned (%v) while a call was in flight", err)
	default:
	}
	g.open()
	select {
	case r := <-inflight:
		if r.err != nil || r.isError || r.text != "released" {
			t.Fatalf("in-flight call during stop: %+v (%v), want its normal result", r, r.err)
		}
	case <-time.After(testtools.StartupBound):
		t.Fatal("in-flight call never completed")
	}
	select {
	case err := <-stopErr:
		stopErr <- err // for the cleanup
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(testtools.StartupBound):
		t.Fatal("Stop did not return after the in-flight call completed")
	}
}

// shutdown_timeout bounds the drain when Stop's context has no deadline: a call
// that never finishes is cancelled and Stop returns.
func TestShutdownTimeoutBoundsTheDrain(t *testing.T) {
	t.Parallel()
	g := newBlocker(t)
	a, err := buildYAML(t, shutdownYAML(g, "300ms"))
	if err != nil {
		t.Fatal(err)
	}
	if a.ShutdownTimeout() != 300*time.Millisecond {
		t.Fatalf("ShutdownTimeout() = %v", a.ShutdownTimeout())
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs := sdSession(t, a, "fastpath")
	inflight := make(chan sdResult, 1)
	go func() { inflight <- sdCall(cs, "slow") }()
	g.waitEntered(t)
	done := make(chan error, 1)
	go func() { done <- a.Stop(context.Background()) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // far beyond 300ms; the engine's own default is 30s
		g.open()
		<-done
		t.Fatal("Stop ignored shutdown_timeout")
	}
	r := <-inflight
	if r.err == nil && !r.isError {
		t.Fatalf("a call still running at shutdown_timeout completed normally: %+v", r)
	}
}

func TestShutdownTimeoutConfig(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, "helix:\n  name: x\n")
	if err != nil {
		t.Fatal(err)
	}
	if a.ShutdownTimeout() != app.DefaultShutdownTimeout {
		t.Fatalf("default ShutdownTimeout() = %v", a.ShutdownTimeout())
	}
	_, err = buildYAML(t, "helix:\n  shutdown_timeout: soon\n")
	if err == nil || !strings.Contains(err.Error(), "helix.yaml:2:21") || !strings.Contains(err.Error(), "duration") {
		t.Fatalf("bad shutdown_timeout: %v", err)
	}
}

// A workflow-backed resource read still running when shutdown_timeout ends is
// cancelled like a tool call: Stop returns in time and the read ends with an error.
func TestShutdownTimeoutEndsResourceReads(t *testing.T) {
	t.Parallel()
	g := newBlocker(t)
	a, err := buildYAML(t, shutdownYAML(g, "300ms")+`
resources:
  - {uri: "app://slow", name: slow, workflow: slow}
`)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs := sdSession(t, a, "sdkpath")
	read := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://slow"})
		read <- err
	}()
	g.waitEntered(t)
	done := make(chan error, 1)
	go func() { done <- a.Stop(context.Background()) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		g.open()
		<-done
		t.Fatal("Stop waited for a resource read beyond shutdown_timeout")
	}
	if err := <-read; err == nil {
		t.Fatal("a resource read still running at shutdown_timeout completed normally")
	}
}
