package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/arvenza/helix/pkg/engine"
)

// countingUpstream serves echoServer and counts the tools/call requests the
// fast relay sent (its request ids are strings "hx-…", the go-sdk client's
// are numbers).
func countingUpstream(t *testing.T) (url string, raw *atomic.Int64) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	echoServer(srv)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	raw = &atomic.Int64{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if bytes.Contains(b, []byte(`"id":"hx-`)) {
				raw.Add(1)
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, raw
}

// fastGateway starts a gateway server in front of url, with the tools/call
// fast path on or off.
func fastGateway(t *testing.T, url string, fast bool, opts gateway.Options) string {
	t.Helper()
	hc := engine.NewContext("gw")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	opts.ServerID = "gw"
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.Upstreams = []config.UpstreamConfig{{ID: "up", URL: url, Prefix: str("up.")}}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(mcpserver.Options{ID: "gw", Addr: "127.0.0.1:0", Extension: g, FastToolCalls: &fast}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hc.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return "http://" + comp.Addr("gw").String() + "/mcp"
}

// rawSession posts JSON-RPC on one stateful 2025-06-18 session.
type rawSession struct {
	url, sid, accept string
}

func openRaw(t *testing.T, url string) *rawSession {
	t.Helper()
	s := &rawSession{url: url, accept: "application/json, text/event-stream"}
	_, h, body := s.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if s.sid = h.Get("Mcp-Session-Id"); s.sid == "" {
		t.Fatalf("initialize: %s", body)
	}
	s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawSession) post(t *testing.T, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", s.accept)
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestFastRelayAnswersAsTheDecodingRelay: a gateway with the fast path relays
// plain tool calls raw (the upstream sees the fast relay's requests), and
// answers byte for byte what the same gateway without the fast path answers
// through the go-sdk client session: results with structured content, images
// and _meta, tool errors, the upstream's JSON-RPC errors, unknown tools, as
// JSON and as event streams.
func TestFastRelayAnswersAsTheDecodingRelay(t *testing.T) {
	t.Parallel()
	url, raw := countingUpstream(t)
	fast := openRaw(t, fastGateway(t, url, true, gateway.Options{}))
	decoding := openRaw(t, fastGateway(t, url, false, gateway.Options{}))
	want := int64(0)
	for i, params := range []string{
		`{"name":"up.echo","arguments":{"text":"hi <b> & \u2028"}}`,
		`{"name":"up.fail","arguments":{}}`,
		`{"name":"up.broken","arguments":{}}`,
		`{"name":"up.echo","arguments":{"text":5}}`,
		`{"name":"up.nope","arguments":{}}`,
	} {
		for _, accept := range []string{"application/json, text/event-stream", "text/event-stream"} {
			fast.accept, decoding.accept = accept, accept
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, 10+i, params)
			fs, fh, fb := fast.post(t, body)
			ds, dh, db := decoding.post(t, body)
			if fs != ds || fh.Get("Content-Type") != dh.Get("Content-Type") || fb != db {
				t.Errorf("%s (%s):\n    fast %d %s %s\ndecoding %d %s %s", params, accept, fs, fh.Get("Content-Type"), fb, ds, dh.Get("Content-Type"), db)
			}
			if !strings.Contains(params, "nope") {
				want++
			}
			if raw.Load() != want {
				t.Fatalf("%s: the fast relay sent %d calls upstream, want %d", params, raw.Load(), want)
			}
		}
	}
}

// refuser refuses up.delete_all, redacts "secret" in the results it wants
// (up.echo's) and bounds up.slow.
type refuser struct{ afters atomic.Int64 }

func (g *refuser) Visible(context.Context, *gateway.Principal, gateway.Kind, string) bool {
	return true
}
func (g *refuser) Before(_ context.Context, c *gateway.Call) error {
	if c.Name == "up.delete_all" {
		return &gateway.Refusal{Message: "not you", Reason: gateway.OutcomeDenied}
	}
	return nil
}
func (g *refuser) WantsResult(c *gateway.Call) bool { return c.Name == "up.echo" }
func (g *refuser) After(_ context.Context, _ *gateway.Call, res json.RawMessage) (json.RawMessage, error) {
	g.afters.Add(1)
	return json.RawMessage(strings.ReplaceAll(string(res), "secret", "<redacted>")), nil
}
func (g *refuser) Timeout(c *gateway.Call) time.Duration {
	if c.Name == "up.slow" {
		return 50 * time.Millisecond
	}
	return 0
}

// TestFastRelayIsGoverned: on the fast relay the guard refuses, redacts the
// results it asks for (and only those), bounds the call, and every call is
// audited with its outcome and upstream session.
func TestFastRelayIsGoverned(t *testing.T) {
	t.Parallel()
	url, raw := countingUpstream(t)
	guard, rec := &refuser{}, &recorder{}
	s := openRaw(t, fastGateway(t, url, true, gateway.Options{Guard: guard, Auditor: rec}))
	call := func(params string) string {
		_, _, b := s.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":`+params+`}`)
		return b
	}
	if got := call(`{"name":"up.echo","arguments":{"text":"my secret"}}`); !strings.Contains(got, `"text":"echo:my \u003credacted\u003e"`) {
		t.Errorf("redacted echo: %s", got)
	}
	if got := call(`{"name":"up.delete_all","arguments":{}}`); got != `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"not you"}],"isError":true}}` {
		t.Errorf("refused call: %s", got)
	}
	if got := call(`{"name":"up.fail","arguments":{}}`); !strings.Contains(got, `"isError":true`) {
		t.Errorf("tool error: %s", got)
	}
	if got := call(`{"name":"up.slow","arguments":{"text":"wait"}}`); !strings.Contains(got, "did not answer in time") {
		t.Errorf("slow call: %s", got)
	}
	<-cancelled // the upstream's call was withdrawn
	if guard.afters.Load() != 1 {
		t.Errorf("After ran %d times, want once (only up.echo's result is wanted)", guard.afters.Load())
	}
	if raw.Load() != 3 {
		t.Errorf("%d calls went through the fast relay, want 3 (the refused one never left)", raw.Load())
	}
	got := rec.outcomes()
	for name, want := range map[string]string{"up.echo": gateway.OutcomeOK, "up.delete_all": gateway.OutcomeDenied,
		"up.fail": gateway.OutcomeToolError, "up.slow": gateway.OutcomeTimeout} {
		if got[name] != want {
			t.Errorf("audit outcome of %s: %q, want %q (all: %v)", name, got[name], want, got)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.recs {
		if r.Name == "up.echo" && (r.UpstreamSession == "" || r.ResultBytes == 0 || r.ArgumentsDigest == "") {
			t.Errorf("record of up.echo: %+v", r)
		}
	}
}

// TestFastRelayForwardsTraceContext: the caller's trace context in _meta
// reaches the upstream on the fast relay, as on the decoding one.
func TestFastRelayForwardsTraceContext(t *testing.T) {
	t.Parallel()
	var seen atomic.Value
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, req *sdk.CallToolRequest, _ echoArgs) (*sdk.CallToolResult, any, error) {
		seen.Store(fmt.Sprint(req.Params.Meta["traceparent"]))
		return &sdk.CallToolResult{}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var raw atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"id":"hx-`)) {
			raw.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	s := openRaw(t, fastGateway(t, ts.URL, true, gateway.Options{}))
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	s.post(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"up.echo","arguments":{"text":"x"},"_meta":{"traceparent":"`+tp+`"}}}`)
	if raw.Load() != 1 || seen.Load() != tp {
		t.Fatalf("fast relay calls %d, traceparent upstream %v", raw.Load(), seen.Load())
	}
}
