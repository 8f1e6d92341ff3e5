package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/upstream"
	"github.com/arvenza/helix/pkg/engine"
)

// hostileUpstream is a go-sdk server whose HTTP front misbehaves on purpose:
// a call of garbage is answered with bytes that are no JSON, a call of drop
// has its connection closed unanswered, huge returns a 10 MB text, slowly
// answers only when cancelled, and hold waits for release. While refuseOpen
// is set, every initialize has its connection closed (the upstream cannot
// take a new session).
type hostileUpstream struct {
	url        string
	refuseOpen atomic.Bool
	inits      atomic.Int32  // initialize requests taken
	holding    chan struct{} // a call of hold has reached the tool
	release    chan struct{}
}

func startHostileUpstream(t *testing.T) *hostileUpstream {
	t.Helper()
	h := &hostileUpstream{holding: make(chan struct{}, 1), release: make(chan struct{})}
	srv := sdk.NewServer(&sdk.Implementation{Name: "hostile", Version: "1"}, nil)
	for _, name := range []string{"garbage", "drop", "echo"} {
		sdk.AddTool(srv, &sdk.Tool{Name: name}, func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo:" + a.Text}}}, nil, nil
		})
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "huge"}, func(context.Context, *sdk.CallToolRequest, echoArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", 10<<20)}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "slowly"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ echoArgs) (*sdk.CallToolResult, any, error) {
		<-ctx.Done() // the behaviour under test: an upstream that never answers in time
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "hold"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ echoArgs) (*sdk.CallToolResult, any, error) {
		h.holding <- struct{}{}
		select {
		case <-h.release:
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "held"}}}, nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hang := func(w http.ResponseWriter) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			switch {
			case bytes.Contains(b, []byte(`"method":"initialize"`)):
				if h.refuseOpen.Load() {
					hang(w)
					return
				}
				h.inits.Add(1)
			case bytes.Contains(b, []byte(`"name":"garbage"`)):
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":`))
				return
			case bytes.Contains(b, []byte(`"name":"drop"`)):
				hang(w)
				return
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	h.url = ts.URL
	return h
}

// hostileGateway is a gateway with the real upstream pool in front of url
// twice: as up (the default timeout) and as short (a timeout of one second),
// with the tools/call fast path on or off.
func hostileGateway(t *testing.T, url string, fast bool) *mcpserver.Component {
	t.Helper()
	hc := engine.NewContext("gw")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	g, err := gateway.New(gateway.Options{ServerID: "gw", Logger: slog.New(slog.DiscardHandler),
		NewPool: upstream.Factory(slog.New(slog.DiscardHandler)),
		Upstreams: []config.UpstreamConfig{{ID: "up", URL: url, Prefix: str("up.")},
			{ID: "short", URL: url, Prefix: str("short."), Timeout: time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	return serveGateway(t, hc, g, mcpserver.Options{FastToolCalls: &fast})
}

// TestGatewaySurvivesAHostileUpstream: an upstream that answers garbage,
// drops the connection, answers 10 MB or never answers in time gives each
// caller a clear error (never the upstream's URL, never a hang), and the
// gateway keeps serving: the same client's next call works.
func TestGatewaySurvivesAHostileUpstream(t *testing.T) {
	t.Parallel()
	up := startHostileUpstream(t)
	for _, fast := range []bool{true, false} {
		comp := hostileGateway(t, up.url, fast)
		cs := connect(t, comp, "/mcp", "2025-11-25", nil)
		call := func(name string) (*sdk.CallToolResult, error) {
			if !strings.Contains(name, ".") {
				name = "up." + name
			}
			return cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"text": "a"}})
		}
		for _, c := range []struct{ tool, want string }{
			{"garbage", "upstream up"},
			{"drop", "may have run"},
			{"short.slowly", "did not answer in time"},
		} {
			res, err := call(c.tool)
			if err == nil {
				t.Fatalf("fast=%v %s: no error but %+v", fast, c.tool, res)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || strings.Contains(msg, up.url) || strings.Contains(msg, "127.0.0.1") {
				t.Errorf("fast=%v %s: error %q, want one that says %q without the upstream's address", fast, c.tool, msg, c.want)
			}
			if res, err := call("echo"); err != nil || text(res) != "echo:a" {
				t.Fatalf("fast=%v after %s: %v %v", fast, c.tool, res, err)
			}
		}
		res, err := call("huge")
		if err != nil {
			t.Fatalf("fast=%v huge: %v", fast, err)
		}
		if n := len(text(res)); n != 10<<20 {
			t.Fatalf("fast=%v huge: %d bytes", fast, n)
		}
	}
}

// TestUpstreamThatCannotOpenASessionKeepsTheOthers: a new client whose
// upstream session cannot be opened is told the upstream could not be reached
// (not the SDK's "rejected by transport"), and the sessions other clients
// have open at that upstream are kept: their call in flight ends as it would,
// and their next call runs on the same session (no new initialize). One
// refused connection is no health check: giving up every session there would
// make each of them open again at an upstream that is already struggling.
func TestUpstreamThatCannotOpenASessionKeepsTheOthers(t *testing.T) {
	t.Parallel()
	up := startHostileUpstream(t)
	comp := hostileGateway(t, up.url, false)
	a := connect(t, comp, "/mcp", "2025-11-25", nil)
	if _, err := a.CallTool(testCtx(t), &sdk.CallToolParams{Name: "up.echo", Arguments: map[string]any{"text": "a"}}); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		res, err := a.CallTool(testCtx(t), &sdk.CallToolParams{Name: "up.hold", Arguments: map[string]any{"text": "a"}})
		if err == nil && text(res) != "held" {
			err = fmt.Errorf("result %q", text(res))
		}
		held <- err
	}()
	<-up.holding
	up.refuseOpen.Store(true)
	b := connect(t, comp, "/mcp", "2025-11-25", nil)
	_, err := b.CallTool(testCtx(t), &sdk.CallToolParams{Name: "up.echo", Arguments: map[string]any{"text": "a"}})
	if err == nil || !strings.Contains(err.Error(), "could not be reached") || strings.Contains(err.Error(), "rejected by transport") {
		t.Fatalf("a client whose session cannot open: %v, want that the upstream could not be reached", err)
	}
	close(up.release)
	if err := <-held; err != nil {
		t.Fatalf("the other client's call in flight: %v", err)
	}
	up.refuseOpen.Store(false)
	opened := up.inits.Load()
	if res, err := a.CallTool(testCtx(t), &sdk.CallToolParams{Name: "up.echo", Arguments: map[string]any{"text": "a"}}); err != nil || text(res) != "echo:a" {
		t.Fatalf("the other client's next call: %v %v", res, err)
	}
	if n := up.inits.Load() - opened; n != 0 {
		t.Errorf("the other client's next call opened %d new upstream sessions, want it on its own session", n)
	}
}
