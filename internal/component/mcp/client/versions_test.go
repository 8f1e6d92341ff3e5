package client

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/uri"
)

// legacyAnswers makes a wireServer a 2025-11-25 server: server/discover is refused
// as a request without a session (as the TypeScript SDK's servers do), initialize
// opens a session.
func legacyAnswers(w http.ResponseWriter, _ *http.Request, msg *wireMsg) bool {
	switch msg.Method {
	case methodDiscover:
		writeJSON(w, http.StatusBadRequest, map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32000, "message": "Bad Request: No valid session ID provided"}})
	case methodInitialize:
		w.Header().Set("Mcp-Session-Id", "s1")
		writeResult(w, msg.ID, map[string]any{"protocolVersion": "2025-11-25",
			"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "legacy", "version": "1"}})
	default:
		return false
	}
	return true
}

// failFirstDiscover answers the first server/discover with fail, the later ones
// as a modern server does.
func failFirstDiscover(fail func(http.ResponseWriter)) func(http.ResponseWriter, *http.Request, *wireMsg) bool {
	var failed atomic.Bool
	return func(w http.ResponseWriter, _ *http.Request, msg *wireMsg) bool {
		if msg.Method == methodDiscover && failed.CompareAndSwap(false, true) {
			fail(w)
			return true
		}
		return false
	}
}

// TestMomentaryDiscoverFailureIsNoLegacyFallback: a modern server whose first
// server/discover fails for a moment (a 503, a reset connection) is not taken for
// an older one: the connect fails with the real cause and sends no initialize, and
// the next call (after the backoff) opens a modern session.
func TestMomentaryDiscoverFailureIsNoLegacyFallback(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		fail func(http.ResponseWriter)
		want string
	}{
		"503": {func(w http.ResponseWriter) { http.Error(w, "busy", http.StatusServiceUnavailable) },
			"answered HTTP 503 Service Unavailable: a momentary failure, not the answer of an older server"},
		"429": {func(w http.ResponseWriter) { http.Error(w, "slow down", http.StatusTooManyRequests) }, "answered HTTP 429"},
		"reset": {func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, "got no answer"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ws := newWireServer(t, nil, failFirstDiscover(tc.fail))
			c := newModernConn(t, ws)
			var skew atomic.Int64
			c.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
			ctx := context.Background()
			_, err := c.CallTool(ctx, "echo", nil)
			if err == nil || !IsDiscoverFailure(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("first call: %v, want a DiscoverFailedError saying %q", err, tc.want)
			}
			if n := len(ws.requests(methodInitialize)); n != 0 {
				t.Fatalf("the client fell back to initialize after a momentary failure (%v)", ws.methods())
			}
			skew.Store(int64(connectBackoffMax)) // past the backoff window
			if _, err := c.CallTool(ctx, "echo", nil); err != nil {
				t.Fatalf("second call: %v", err)
			}
			init, err := c.InitializeResult(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v := init.ProtocolVersion; v != protocolModern {
				t.Errorf("session speaks %s, want %s", v, protocolModern)
			}
			if n := len(ws.requests(methodInitialize)); n != 0 {
				t.Errorf("initialize sent: %v", ws.methods())
			}
		})
	}
}

// TestOlderServerGetsInitialize: the refusal of server/discover by a 2025-11-25
// server is an answer: the client falls back to initialize and works.
func TestOlderServerGetsInitialize(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, nil, legacyAnswers)
	c := newModernConn(t, ws)
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "echo", nil); err != nil {
		t.Fatal(err)
	}
	got := ws.methods()
	if !slices.Equal(got[:2], []string{methodDiscover, methodInitialize}) {
		t.Errorf("requests %v, want server/discover then initialize", got)
	}
	init, err := c.InitializeResult(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := init.ProtocolVersion; v != "2025-11-25" {
		t.Errorf("session speaks %s, want 2025-11-25", v)
	}
	if calls := ws.requests("tools/call"); len(calls) != 1 || calls[0].Header.Get("Mcp-Session-Id") != "s1" {
		t.Errorf("calls %v, want one in session s1", calls)
	}
}

// TestFindPathKeepsPathOnMomentaryFailure: with FindPath, a 503 at /mcp does not
// send the client to / (where the server is not); the next call finds /mcp.
func TestFindPathKeepsPathOnMomentaryFailure(t *testing.T) {
	t.Parallel()
	inner := failFirstDiscover(func(w http.ResponseWriter) { http.Error(w, "busy", http.StatusServiceUnavailable) })
	ws := newWireServer(t, nil, func(w http.ResponseWriter, r *http.Request, msg *wireMsg) bool {
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return true
		}
		return inner(w, r, msg)
	})
	c, err := NewConn(Config{Endpoint: ws.url, FindPath: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var skew atomic.Int64
	c.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "echo", nil); err == nil || !IsDiscoverFailure(err) {
		t.Fatalf("first call: %v, want a DiscoverFailedError", err)
	}
	for _, s := range ws.all() {
		if s.Path != "/mcp" {
			t.Errorf("the client tried %s %s after a 503 at /mcp", s.Method, s.Path)
		}
	}
	skew.Store(int64(connectBackoffMax))
	if _, err := c.CallTool(ctx, "echo", nil); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if got := c.Endpoint(); got != ws.url+"/mcp" {
		t.Errorf("endpoint %s, want %s/mcp", got, ws.url)
	}
}

// TestPinnedProtocolVersion: a pin older than 2026-07-28 goes straight to
// initialize; a pin of 2026-07-28 refuses an older server instead of falling back;
// a version the client does not speak is a configuration error.
func TestPinnedProtocolVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("older", func(t *testing.T) {
		t.Parallel()
		ws := newWireServer(t, nil, legacyAnswers)
		c, err := NewConn(Config{Endpoint: ws.url, ProtocolVersion: "2025-06-18", Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.CallTool(ctx, "echo", nil); err != nil {
			t.Fatal(err)
		}
		if got := ws.methods(); got[0] != methodInitialize || len(ws.requests(methodDiscover)) != 0 {
			t.Errorf("requests %v, want initialize first and no server/discover", got)
		}
		var params struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(ws.requests(methodInitialize)[0].Params, &params)
		if params.ProtocolVersion != "2025-06-18" {
			t.Errorf("initialize offered %q, want 2025-06-18", params.ProtocolVersion)
		}
	})
	t.Run("modern-refuses-older-server", func(t *testing.T) {
		t.Parallel()
		ws := newWireServer(t, nil, legacyAnswers)
		c, err := NewConn(Config{Endpoint: ws.url, ProtocolVersion: protocolModern, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_, err = c.CallTool(ctx, "echo", nil)
		if err == nil || !strings.Contains(err.Error(), "the server does not speak protocol 2026-07-28") || !strings.Contains(err.Error(), "answered initialize with 2025-11-25") {
			t.Fatalf("call: %v, want a refusal of the older server", err)
		}
		if n := len(ws.requests("tools/call")); n != 0 {
			t.Errorf("the call was sent on the older session")
		}
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		_, err := NewConn(Config{Endpoint: "http://127.0.0.1:1", ProtocolVersion: "2026-01-01"})
		if err == nil || !strings.Contains(err.Error(), `protocol version "2026-01-01" is not one the client speaks (use one of 2026-07-28, 2025-11-25`) {
			t.Errorf("NewConn: %v, want the versions it speaks", err)
		}
	})
}

func TestProtocolVersionOption(t *testing.T) {
	t.Parallel()
	u, err := uri.Parse("mcp://localhost:8080/mcp/echo?protocolVersion=2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := ParseURI(u)
	if err != nil || cfg.ProtocolVersion != "2025-11-25" {
		t.Errorf("ParseURI: %+v, %v; want ProtocolVersion 2025-11-25", cfg.ProtocolVersion, err)
	}
	u, err = uri.Parse("mcp://localhost:8080/mcp/echo?protocolVersion=2025-11-24")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseURI(u); err == nil || !strings.Contains(err.Error(), "protocolVersion") || !strings.Contains(err.Error(), "2025-11-25") {
		t.Errorf("ParseURI with an unknown version: %v, want an error naming the option and a version it takes", err)
	}
}
