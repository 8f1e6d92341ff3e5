package upstream

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/pkg/engine"
)

// Protocol bridging end to end: through the gateway (its pools made by
// Factory), a 2026-07-28 client uses a legacy stateful upstream and a
// 2025-11-25 client a sessionless 2026-07-28 upstream; each upstream session
// negotiated its own version.
func TestGatewayBridgesProtocolEras(t *testing.T) {
	legacy := httpUpstream(t, testServer("legacy", legacyVersions, nil), nil)
	modern := httpUpstream(t, testServer("modern", nil, nil), nil)

	comp, pools := startGateway(t, []config.UpstreamConfig{
		{ID: "leg", URL: legacy.URL, Health: config.HealthConfig{Interval: -1}},
		{ID: "mod", URL: modern.URL, Health: config.HealthConfig{Interval: -1}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct{ client, tool, wantUpstream string }{
		{"2026-07-28", "leg.echo", "2025-11-25"},
		{"2025-11-25", "mod.echo", "2026-07-28"},
	} {
		t.Run(tc.client+" client, "+tc.wantUpstream+" upstream", func(t *testing.T) {
			tr := &sdk.StreamableClientTransport{Endpoint: "http://" + comp.Addr("gw").String() + "/mcp", MaxRetries: -1}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, nil).
				Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: tc.client})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tc.client {
				t.Fatalf("the client speaks %s with the gateway, want %s", got, tc.client)
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: map[string]any{"text": "across eras"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "across eras" || res.IsError {
				t.Errorf("%s answered %+v", tc.tool, res)
			}
			if got := pools(tc.tool[:3]).Status().ProtocolVersion; got != tc.wantUpstream {
				t.Errorf("the upstream session speaks %s, want %s", got, tc.wantUpstream)
			}
		})
	}
}

// startGateway starts a Helix MCP server whose gateway fronts upstreams with
// pools made by Factory; pools gives the pool of an upstream id.
func startGateway(t *testing.T, upstreams []config.UpstreamConfig) (*mcpserver.Component, func(id string) *Pool) {
	t.Helper()
	var mu sync.Mutex
	pools := map[string]*Pool{}
	factory := Factory(slog.New(slog.DiscardHandler))
	g, err := gateway.New(gateway.Options{ServerID: "gw", Logger: slog.New(slog.DiscardHandler), Upstreams: upstreams,
		NewPool: func(u config.UpstreamConfig, hc *http.Client) (gateway.Pool, error) {
			p, err := factory(u, hc)
			if err == nil {
				mu.Lock()
				pools[u.ID] = p.(*Pool)
				mu.Unlock()
			}
			return p, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	hc := engine.NewContext("gw")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(mcpserver.Options{ID: "gw", Addr: "127.0.0.1:0", Extension: g}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hc.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return comp, func(id string) *Pool {
		mu.Lock()
		defer mu.Unlock()
		return pools[id]
	}
}

// gatewayClient connects a client of protocol version to the gateway.
func gatewayClient(t *testing.T, comp *mcpserver.Component, version string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &sdk.StreamableClientTransport{Endpoint: "http://" + comp.Addr("gw").String() + "/mcp", MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, nil).
		Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// waitForTool waits until the gateway lists name (discovery runs in the background).
func waitForTool(t *testing.T, cs *sdk.ClientSession, name string) {
	t.Helper()
	eventually(t, name+" to be listed", func() bool {
		lt, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range lt.Tools {
			if tl.Name == name {
				return true
			}
		}
		return false
	})
}

// Through the gateway: a call that failed where it cannot have run goes to
// the next replica (the tool runs once); a call the upstream read before the
// connection dropped is not sent again, and the client is told it may have run.
func TestGatewayRetriesOnlyWhatCannotHaveRun(t *testing.T) {
	var runs atomic.Int64
	var dropped atomic.Int32
	unavailable := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "tools/call" {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	drop := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "tools/call" {
				dropped.Add(1)
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					_ = conn.Close()
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	a := httpUpstream(t, testServer("a", legacyVersions, &runs), unavailable)
	b := httpUpstream(t, testServer("b", legacyVersions, &runs), nil)
	c := httpUpstream(t, testServer("c", legacyVersions, nil), drop)
	comp, _ := startGateway(t, []config.UpstreamConfig{
		{ID: "ab", URL: a.URL, Replicas: []string{b.URL}, Health: config.HealthConfig{Interval: -1}},
		{ID: "c", URL: c.URL, Health: config.HealthConfig{Interval: -1}},
	})
	cs := gatewayClient(t, comp, "2025-11-25")
	waitForTool(t, cs, "ab.count")
	waitForTool(t, cs, "c.count")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ab.count", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("ab.count: %v %+v", err, res)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "c.count", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "not sent again") || strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("c.count: %v; want an error saying it was not sent again, without the upstream's address", err)
	}
	if n := dropped.Load(); n != 1 {
		t.Errorf("the call reached the dropping upstream %d times, want 1", n)
	}
}
