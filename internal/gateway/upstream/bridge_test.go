package upstream

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
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

	var mu sync.Mutex
	pools := map[string]*Pool{}
	factory := Factory(slog.New(slog.DiscardHandler))
	g, err := gateway.New(gateway.Options{ServerID: "gw", Logger: slog.New(slog.DiscardHandler),
		Upstreams: []config.UpstreamConfig{
			{ID: "leg", URL: legacy.URL, Health: config.HealthConfig{Interval: -1}},
			{ID: "mod", URL: modern.URL, Health: config.HealthConfig{Interval: -1}},
		},
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
			mu.Lock()
			p := pools[tc.tool[:3]]
			mu.Unlock()
			if got := p.Status().ProtocolVersion; got != tc.wantUpstream {
				t.Errorf("the upstream session speaks %s, want %s", got, tc.wantUpstream)
			}
		})
	}
}
