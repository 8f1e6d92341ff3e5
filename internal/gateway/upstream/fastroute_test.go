package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/fastrelay"
)

// fastCall relays echo through p's session for key with the fast relay, as
// the gateway's fast path does.
func fastCall(ctx context.Context, p *Pool, key gateway.SessionKey, relay *fastrelay.Relay, text string) (string, error) {
	var out string
	err := p.Call(ctx, key, nil, func(ctx context.Context, s *sdk.ClientSession) error {
		url, hc, ok := p.FastRoute(s)
		if !ok {
			return errNoRoute
		}
		up := &fastrelay.Upstream{URL: url, Client: hc, SessionID: s.ID(), ProtocolVersion: s.InitializeResult().ProtocolVersion}
		args, _ := json.Marshal(map[string]string{"text": text})
		r, err := relay.CallTool(ctx, up, "echo", args)
		if err != nil {
			return err
		}
		out = string(r.Result)
		return nil
	})
	return out, err
}

type routeError string

func (e routeError) Error() string { return string(e) }

const errNoRoute = routeError("no fast route")

// TestFastRouteThroughThePool: the fast relay reaches the pool's session with
// the pool's headers and the caller's; when the upstream forgot the session
// (restarted), Call opens a new one and sends the call again, since it cannot
// have run. stdio and SSE upstreams have no fast route.
func TestFastRouteThroughThePool(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []http.Header
	var forget atomic.Bool
	// A stateful upstream of the protocols before 2026-07-28: the ones the fast
	// relay serves.
	ts := httpUpstream(t, testServer("http", []string{"2025-11-25", "2025-06-18"}, nil), func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "tools/call" {
				mu.Lock()
				seen = append(seen, r.Header.Clone())
				mu.Unlock()
				if forget.CompareAndSwap(true, false) {
					http.Error(w, "session not found", http.StatusNotFound)
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	p := newPool(t, config.UpstreamConfig{ID: "up", URL: ts.URL, Headers: map[string]string{"X-Team": "support"}, Health: config.HealthConfig{Interval: -1}})
	relay := fastrelay.New(fastrelay.Options{})
	ctx := gateway.WithUpstreamHeader(context.Background(), http.Header{"Authorization": {"Bearer caller"}})
	key := gateway.SessionKey{Downstream: "d1"}
	got, err := fastCall(ctx, p, key, relay, "hi")
	if err != nil || got != `{"content":[{"type":"text","text":"hi"}]}` {
		t.Fatalf("fast call: %q %v", got, err)
	}
	first, err := p.Session(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	h := seen[0]
	mu.Unlock()
	if h.Get("X-Team") != "support" || h.Get("Authorization") != "Bearer caller" || h.Get("Mcp-Session-Id") != first.ID() {
		t.Errorf("headers of the fast call: %v", h)
	}

	forget.Store(true)
	if got, err = fastCall(ctx, p, key, relay, "again"); err != nil || got != `{"content":[{"type":"text","text":"again"}]}` {
		t.Fatalf("call after the upstream forgot the session: %q %v", got, err)
	}
	second, err := p.Session(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(seen)
	mu.Unlock()
	if second.ID() == first.ID() || n != 3 {
		t.Errorf("after a 404: session %s (was %s), %d calls sent; want a new session and the call sent again once", second.ID(), first.ID(), n)
	}
	if _, _, ok := p.FastRoute(first); ok {
		t.Error("a session the pool gave up still has a fast route")
	}
	if n := p.loop.Sent(); n != 3 {
		t.Errorf("the pool's HTTP/1.1 loop sent %d of the 3 fast calls", n)
	}

	sp := newPool(t, stdioConfig(""))
	s, err := sp.Session(context.Background(), gateway.SessionKey{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := sp.FastRoute(s); ok {
		t.Error("a stdio session has a fast route")
	}
}

// TestFastCallDroppedAfterWritingIsNotSentAgain: a fast call whose connection
// the upstream closes after reading it (no answer) may have run: Call does not
// send it again, on the pool's HTTP/1.1 loop as on net/http's transport.
func TestFastCallDroppedAfterWritingIsNotSentAgain(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ts := httpUpstream(t, testServer("http", []string{"2025-11-25", "2025-06-18"}, nil), func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "tools/call" && calls.Add(1) > 1 {
				c, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					c.Close()
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	p := newPool(t, config.UpstreamConfig{ID: "up", URL: ts.URL, Health: config.HealthConfig{Interval: -1}})
	relay := fastrelay.New(fastrelay.Options{})
	key := gateway.SessionKey{Downstream: "d1"}
	if _, err := fastCall(context.Background(), p, key, relay, "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := fastCall(context.Background(), p, key, relay, "two"); err == nil {
		t.Fatal("a call the upstream dropped unanswered succeeded")
	}
	if n := calls.Load(); n != 2 || p.loop.Sent() != 2 {
		t.Errorf("the upstream read %d calls (loop sent %d); want 2: the dropped one is not sent again", n, p.loop.Sent())
	}
}
