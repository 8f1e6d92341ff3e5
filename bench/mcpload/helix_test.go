package main

import (
	"bytes"
	"context"
	"github.com/arvenza/helix/internal/testtools"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/component/mcp"
	"github.com/arvenza/helix/pkg/engine"
)

// startHelix serves an echo tool from an in-process Helix MCP server and returns
// its Streamable HTTP URL.
func startHelix(t *testing.T, opts mcp.ServerOptions) string {
	t.Helper()
	hc := engine.NewContext("mcpload-smoke")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	err := hc.AddWorkflow(testtools.EchoWorkflow())
	if err != nil {
		t.Fatal(err)
	}
	sc := mcp.NewServer(hc)
	hc.AddComponent("mcp-server", sc)
	opts.ID, opts.Addr = "smoke", "127.0.0.1:0"
	if err := sc.AddServer(opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := hc.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return "http://" + sc.Addr("smoke").String() + "/mcp"
}

// TestSmokeAgainstHelix is the CI benchmark smoke: the load tool against Helix's
// MCP server for about two seconds per mode. It fails on errors, never on timings.
func TestSmokeAgainstHelix(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(mode(stateless), func(t *testing.T) {
			cfg := quickConfig(startHelix(t, mcp.ServerOptions{Stateless: stateless}))
			cfg.Clients, cfg.Duration, cfg.Warmup, cfg.Stateless = 8, 2*time.Second, 200*time.Millisecond, stateless
			r, err := runLoad(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%.0f req/s p50 %.0fµs p99 %.0fµs cpu %.0fµs/call (client and server share this process)",
				r.RPS, r.P50us, r.P99us, r.CPUusPerCall)
			if r.Errors != 0 || r.Requests == 0 {
				t.Fatalf("requests=%d errors=%d %q", r.Requests, r.Errors, r.ErrorSamples)
			}
		})
	}
}

// TestSessionsEvictedByHelix opens idle sessions against Helix with a short idle
// timeout and checks that the sessions subcommand sees every one of them evicted.
func TestSessionsEvictedByHelix(t *testing.T) {
	url := startHelix(t, mcp.ServerOptions{SessionIdleTimeout: 500 * time.Millisecond})
	var out bytes.Buffer
	err := run(context.Background(), []string{"sessions", "-url", url, "-n", "40", "-clients", "4", "-idle", "500ms"}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "40 sessions gone (404), 0 still alive") {
		t.Fatalf("output:\n%s", out.String())
	}
}
