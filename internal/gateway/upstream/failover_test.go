package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// When the replica in use dies, the health check notices, the session is
// reopened on the next replica at its next use and the core is told; the
// primary is reported unhealthy.
func TestFailoverWhenFirstReplicaDies(t *testing.T) {
	a := httpUpstream(t, testServer("a", legacyVersions, nil), nil)
	b := httpUpstream(t, testServer("b", legacyVersions, nil), nil)
	var reopened atomic.Int32
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: a.URL, Replicas: []string{b.URL},
		Health: config.HealthConfig{Interval: 20 * time.Millisecond, Timeout: time.Second}},
		WithOnReopen(func(gateway.SessionKey, *sdk.ClientSession) { reopened.Add(1) }))
	key := gateway.SessionKey{Downstream: "d"}
	if who := field(mustCall(t, p, key, "whoami"), 0); who != "a" {
		t.Fatalf("first call served by %s, want a", who)
	}
	a.CloseClientConnections()
	a.Close()
	eventually(t, "a to turn unhealthy", func() bool { return !p.Status().Endpoints[0].Healthy })
	if who := field(mustCall(t, p, key, "whoami"), 0); who != "b" {
		t.Fatalf("after a died: served by %s, want b", who)
	}
	if reopened.Load() != 1 {
		t.Errorf("onReopen called %d times, want 1", reopened.Load())
	}
	st := p.Status()
	if st.Endpoint != b.URL || st.Endpoints[0].Healthy || !st.Healthy || st.Endpoints[0].LastError == "" {
		t.Errorf("status %+v: want b in use, a unhealthy with its error", st)
	}
	// A new downstream session goes to the healthy replica straight away.
	if who := field(mustCall(t, p, gateway.SessionKey{Downstream: "e"}, "whoami"), 0); who != "b" {
		t.Errorf("new session opened on %s, want b", who)
	}
}

// A call the upstream read before the connection dropped may have run: it is
// not sent again, and the error says so.
func TestNoRetryAfterTheRequestWasWritten(t *testing.T) {
	var received atomic.Int32
	drop := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "tools/call" {
				received.Add(1)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = conn.Close()
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	a := httpUpstream(t, testServer("a", legacyVersions, nil), drop)
	b := httpUpstream(t, testServer("b", legacyVersions, nil), nil)
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: a.URL, Replicas: []string{b.URL}, Health: config.HealthConfig{Interval: -1}})
	_, err := callText(context.Background(), p, gateway.SessionKey{Downstream: "d"}, "count", nil)
	var mayHaveRun *MayHaveRunError
	if !errors.As(err, &mayHaveRun) || !strings.Contains(err.Error(), "not sent again") {
		t.Fatalf("got %v, want a MayHaveRunError saying it was not sent again", err)
	}
	if n := received.Load(); n != 1 {
		t.Errorf("the call reached the upstream %d times, want 1", n)
	}
}

// A refused connection and a 503 mean the call never ran: it moves to the
// next replica.
func TestRetryWhereTheCallCannotHaveRun(t *testing.T) {
	t.Run("503", func(t *testing.T) {
		var runs atomic.Int64
		unavailable := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if rpcMethod(r) == "tools/call" {
					http.Error(w, "overloaded", http.StatusServiceUnavailable)
					return
				}
				next.ServeHTTP(w, r)
			})
		}
		a := httpUpstream(t, testServer("a", legacyVersions, &runs), unavailable)
		b := httpUpstream(t, testServer("b", legacyVersions, &runs), nil)
		p := newPool(t, config.UpstreamConfig{ID: "u", URL: a.URL, Replicas: []string{b.URL}, Health: config.HealthConfig{Interval: -1}})
		mustCall(t, p, gateway.SessionKey{Downstream: "d"}, "count")
		if n := runs.Load(); n != 1 {
			t.Errorf("the tool ran %d times, want 1", n)
		}
		if p.Status().Endpoints[0].Healthy {
			t.Error("a replica answering 503 is still healthy")
		}
	})
	t.Run("refused", func(t *testing.T) {
		// A port nobody listens on: connect is refused before anything is written.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String() + "/mcp"
		_ = l.Close()
		b := httpUpstream(t, testServer("b", legacyVersions, nil), nil)
		p := newPool(t, config.UpstreamConfig{ID: "u", URL: dead, Replicas: []string{b.URL}, Health: config.HealthConfig{Interval: -1}})
		if who := field(mustCall(t, p, gateway.SessionKey{}, "whoami"), 0); who != "b" {
			t.Errorf("served by %s, want b", who)
		}
	})
}

// Health checks ping every endpoint; a change is a log line and shows in
// Status; an endpoint that comes back is preferred again for new sessions.
func TestHealthStatusChanges(t *testing.T) {
	var down atomic.Bool
	flaky := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	a := httpUpstream(t, testServer("a", nil, nil), flaky)
	b := httpUpstream(t, testServer("b", nil, nil), nil)
	logs := &logBuffer{}
	p, err := New(config.UpstreamConfig{ID: "u", URL: a.URL, Replicas: []string{b.URL},
		Health: config.HealthConfig{Interval: 20 * time.Millisecond, Timeout: time.Second}}, nil, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	down.Store(true)
	eventually(t, "a to turn unhealthy", func() bool { return !p.Status().Endpoints[0].Healthy })
	if st := p.Status(); !st.Healthy || st.Endpoint != b.URL {
		t.Errorf("status %+v: want healthy through b", st)
	}
	if who := field(mustCall(t, p, gateway.SessionKey{Downstream: "x"}, "whoami"), 0); who != "b" {
		t.Errorf("new session on %s while a is down, want b", who)
	}
	down.Store(false)
	eventually(t, "a to turn healthy again", func() bool { return p.Status().Endpoints[0].Healthy })
	if who := field(mustCall(t, p, gateway.SessionKey{Downstream: "y"}, "whoami"), 0); who != "a" {
		t.Errorf("new session on %s after a came back, want a", who)
	}
	out := logs.String()
	if !strings.Contains(out, "upstream unhealthy") || !strings.Contains(out, "upstream healthy") {
		t.Errorf("log lacks the health changes:\n%s", out)
	}
}

// Every upstream session negotiates its own protocol version: a legacy
// stateful server gets a 2025-11-25 session with an id, a 2026-07-28 server a
// sessionless one.
func TestUpstreamNegotiatesItsOwnProtocol(t *testing.T) {
	for _, tc := range []struct {
		name      string
		versions  []string
		want      string
		sessionID bool
	}{
		{"legacy stateful", legacyVersions, "2025-11-25", true},
		{"2026-07-28", nil, "2026-07-28", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httpUpstream(t, testServer("s", tc.versions, nil), nil)
			p := newPool(t, config.UpstreamConfig{ID: "u", URL: ts.URL, Health: config.HealthConfig{Interval: -1}})
			s, err := p.Session(context.Background(), gateway.SessionKey{Downstream: "d"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.InitializeResult().ProtocolVersion; got != tc.want {
				t.Errorf("negotiated %s, want %s", got, tc.want)
			}
			if (s.ID() != "") != tc.sessionID {
				t.Errorf("session id %q, want one: %v", s.ID(), tc.sessionID)
			}
			if got := p.Status().ProtocolVersion; got != tc.want {
				t.Errorf("status protocol %s, want %s", got, tc.want)
			}
			if out := mustCall(t, p, gateway.SessionKey{Downstream: "d"}, "echo"); out != "" {
				t.Errorf("echo without text answered %q", out)
			}
		})
	}
}

// The upstream gets the configured headers and the auth: credentials on
// every request, and a call's own headers (WithUpstreamHeader) on its own.
func TestHeadersAuthAndPerCallHeaders(t *testing.T) {
	seen := make(chan http.Header, 100)
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "tools/call" {
				seen <- r.Header.Clone()
			}
			next.ServeHTTP(w, r)
		})
	}
	ts := httpUpstream(t, testServer("s", nil, nil), record)
	auth, err := client.ParseAuth(map[string]any{"type": "bearer", "token": "gw-secret"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(config.UpstreamConfig{ID: "u", URL: ts.URL, Headers: map[string]string{"X-Team": "support"},
		Health: config.HealthConfig{Interval: -1}}, auth, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := gateway.WithUpstreamHeader(context.Background(), http.Header{"X-Caller": {"alice"}})
	if _, err := callText(ctx, p, gateway.SessionKey{}, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := callText(context.Background(), p, gateway.SessionKey{}, "echo", nil); err != nil {
		t.Fatal(err)
	}
	first, second := <-seen, <-seen
	if first.Get("X-Team") != "support" || first.Get("Authorization") != "Bearer gw-secret" || first.Get("X-Caller") != "alice" {
		t.Errorf("first call's headers %v", first)
	}
	if second.Get("X-Caller") != "" {
		t.Errorf("the second call carries the first caller's header: %v", second)
	}
}

// Bad configs are refused with what is wrong, where, and what to do.
func TestNewRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  config.UpstreamConfig
		want string
	}{
		{config.UpstreamConfig{ID: "u", Path: "mcps[0].upstreams[0]"}, "mcps[0].upstreams[0] (u): url is required"},
		{config.UpstreamConfig{ID: "u", URL: "ftp://x"}, "not an http or https URL"},
		{config.UpstreamConfig{ID: "u", URL: "http://x", Transport: "grpc"}, `unknown transport "grpc"`},
		{config.UpstreamConfig{ID: "u", URL: "http://x", Sessions: "per-moon"}, `unknown sessions "per-moon"`},
		{config.UpstreamConfig{ID: "u", Command: "x", URL: "http://x", Transport: "stdio"}, "url/replicas are set with transport stdio"},
		{config.UpstreamConfig{ID: "u", URL: "https://user:pw@x/?token=secret", Replicas: []string{"nope"}}, `"nope" is not an http`},
	} {
		_, err := New(tc.cfg, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// A stdio command that cannot start is an error naming it; the pool is unhealthy.
func TestStdioCommandMissing(t *testing.T) {
	p := newPool(t, config.UpstreamConfig{ID: "gone", Command: "/nonexistent/helix-upstream", Health: config.HealthConfig{Interval: -1}})
	_, err := p.Session(context.Background(), gateway.SessionKey{}, nil)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/helix-upstream") {
		t.Fatalf("got %v, want an error naming the command", err)
	}
	if st := p.Status(); st.Healthy || st.LastError == "" {
		t.Errorf("status %+v, want unhealthy with the error", st)
	}
}

// An upstream that restarted forgets its sessions and answers 404 for them:
// the request was not processed, so it goes again on a new session (the core
// is told), and the tool runs once.
func TestSessionForgottenByRestartedUpstreamIsReopened(t *testing.T) {
	var runs atomic.Int64
	srv := testServer("s", legacyVersions, &runs)
	var current atomic.Pointer[http.Handler]
	fresh := func() {
		var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
		current.Store(&h)
	}
	fresh()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(ts.Close) // after the pool's, which ends its streams
	var reopened atomic.Int32
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: ts.URL, Health: config.HealthConfig{Interval: -1}},
		WithOnReopen(func(gateway.SessionKey, *sdk.ClientSession) { reopened.Add(1) }))
	key := gateway.SessionKey{Downstream: "d"}
	before := field(mustCall(t, p, key, "whoami"), 2)
	fresh() // the "restart": a handler that knows no session
	mustCall(t, p, key, "count")
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if after := field(mustCall(t, p, key, "whoami"), 2); after == before {
		t.Errorf("still session %s", before)
	}
	if reopened.Load() != 1 {
		t.Errorf("onReopen called %d times, want 1", reopened.Load())
	}
}

// An SSE upstream (the 2024-11-05 transport) is served like the others.
func TestSSEUpstream(t *testing.T) {
	srv := testServer("sse", legacyVersions, nil)
	ts := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close) // after the pool's, which ends its stream
	p := newPool(t, config.UpstreamConfig{ID: "old", URL: ts.URL, Transport: "sse",
		Health: config.HealthConfig{Interval: 20 * time.Millisecond, Timeout: time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The first call's context ends with it; the session must outlive it.
	first, err := callText(ctx, p, gateway.SessionKey{}, "echo", map[string]any{"text": "one"})
	cancel()
	if err != nil || first != "one" {
		t.Fatalf("first call: %q, %v", first, err)
	}
	if out := mustCall(t, p, gateway.SessionKey{}, "whoami"); field(out, 0) != "sse" {
		t.Errorf("whoami answered %q", out)
	}
	time.Sleep(60 * time.Millisecond) // a few health checks
	if st := p.Status(); !st.Healthy || st.OpenSessions != 1 {
		t.Errorf("status %+v, want healthy with one session", st)
	}
}

// headerRT sets one header on every request (a client built by the core).
type headerRT struct{ k, v string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.k, h.v)
	return http.DefaultTransport.RoundTrip(r)
}

// With the core's own HTTP client, its headers go with every request and the
// call's own headers with the call's; the client given is not changed.
func TestWithHTTPClient(t *testing.T) {
	seen := make(chan http.Header, 10)
	ts := httpUpstream(t, testServer("s", nil, nil), func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "tools/call" {
				seen <- r.Header.Clone()
			}
			next.ServeHTTP(w, r)
		})
	})
	hc := &http.Client{Transport: headerRT{"Authorization", "Bearer core"}}
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: ts.URL, Health: config.HealthConfig{Interval: -1}}, WithHTTPClient(hc))
	ctx := gateway.WithUpstreamHeader(context.Background(), http.Header{"X-Caller": {"bob"}})
	if _, err := callText(ctx, p, gateway.SessionKey{}, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if h := <-seen; h.Get("Authorization") != "Bearer core" || h.Get("X-Caller") != "bob" {
		t.Errorf("headers %v", h)
	}
	if _, ok := hc.Transport.(headerRT); !ok {
		t.Errorf("the given client's transport was replaced by %T", hc.Transport)
	}
}

// An answer larger than the pool's bound fails its call with an error that
// says so, unread beyond the bound; the session is reopened for the next call.
func TestAnswerTooLarge(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	huge := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						Name string `json:"name"`
					} `json:"params"`
				}
				_ = json.Unmarshal(body, &m)
				if m.Method == "tools/call" && m.Params.Name == "big" {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, m.ID, big)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	ts := httpUpstream(t, testServer("s", nil, nil), huge)
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: ts.URL, Health: config.HealthConfig{Interval: -1}}, WithMaxResponseBytes(1<<20))
	_, err := callText(context.Background(), p, gateway.SessionKey{}, "big", nil)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1048576 bytes") {
		t.Fatalf("got %v, want ErrTooLarge naming the bound", err)
	}
	if out := mustCall(t, p, gateway.SessionKey{}, "echo"); out != "" {
		t.Errorf("the next call answered %q", out)
	}
}
