// Command gatewaypeer is Helix's gateway without the YAML: a Helix MCP server
// (internal/component/mcp/server, Helix's transport) whose Extension is the
// gateway (internal/gateway) in front of one upstream, with the defaults a
// gateway entry gets (every call allowed, no audit, the gateway's own
// credentials, per-client upstream sessions, the upstream pool and HTTP client
// of pkg/app). -debug serves pprof and expvar for profiling the gateway. -fast=false turns the server's
// tools/call fast path off, so that every call is relayed by decoding through
// the go-sdk client session. The benchmark script runs it where a helix
// binary that serves gateway YAML is not at hand (BENCHMARKS.md says which
// figures come from it). -h1=false sends the fast relay's upstream calls
// through net/http's transport instead of Helix's own HTTP/1.1 loop (the A/B
// of that loop in one binary). -loop serves the clients on the prototype of a
// downstream HTTP/1.1 loop of Helix's own (loop.go) instead of Go's HTTP
// server, in front of the same handler.
//
//	gatewaypeer -addr 127.0.0.1:3111 -upstream http://127.0.0.1:3102/mcp [-fast=false] [-h1=false] [-loop]
package main

import (
	"context"
	"expvar"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/h1"
	"github.com/arvenza/helix/internal/gateway/upstream"
	"github.com/arvenza/helix/pkg/engine"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3111", "listen address")
	upURL := flag.String("upstream", "", "the upstream's Streamable HTTP endpoint")
	fast := flag.Bool("fast", true, "the server's tools/call fast path, and with it the fast relay (false: every call decoded through the go-sdk client session)")
	debug := flag.String("debug", "", "address of /debug/pprof/ (none when empty)")
	ownLoop := flag.Bool("h1", true, "the fast relay's upstream calls on Helix's own HTTP/1.1 loop, as pkg/app sets it up (false: net/http's transport)")
	serveLoop := flag.Bool("loop", false, "serve the clients on the prototype downstream HTTP/1.1 loop (loop.go) instead of Go's HTTP server")
	flag.Parse()
	if *debug != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		// The memstats mcpload -memstats reads: the gateway's allocations per call.
		mux.Handle("/debug/vars", expvar.Handler())
		go func() { log.Println(http.ListenAndServe(*debug, mux)) }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *upURL, *fast, *ownLoop, *serveLoop); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaypeer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, upURL string, fast, ownLoop, serveLoop bool) error {
	if upURL == "" {
		return fmt.Errorf("-upstream is required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	empty := ""
	// The upstream pool and HTTP client pkg/app gives a gateway entry: the
	// mcp client's keep-alive transport, health checks, per-client sessions.
	g, err := gateway.New(gateway.Options{ServerID: "gateway", Logger: logger,
		Upstreams: []config.UpstreamConfig{{ID: "up", URL: upURL, Prefix: &empty}},
		NewPool:   upstream.Factory(logger),
		HTTPClient: func(config.UpstreamConfig) (*http.Client, error) {
			c, base, err := mcpclient.NewAuthHTTPClient(nil, nil)
			if err == nil && ownLoop {
				h1.Register(base)
			}
			return c, err
		}})
	if err != nil {
		return err
	}
	hc := engine.NewContext("gatewaypeer")
	hc.SetLogger(logger)
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	opts := mcpserver.Options{ID: "gateway", Addr: addr, Extension: g, FastToolCalls: &fast}
	var handler http.Handler
	if serveLoop {
		// The server still listens (on a port of its own choosing); the clients
		// reach its handler through the loop on addr.
		opts.Addr = "127.0.0.1:0"
		opts.HTTPMiddleware = func(h http.Handler) http.Handler { handler = h; return h }
	}
	if err := comp.AddServer(opts); err != nil {
		return err
	}
	if err := hc.Start(ctx); err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	if serveLoop {
		if handler == nil {
			return fmt.Errorf("the MCP server started without its HTTP handler")
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		go func() { <-ctx.Done(); ln.Close() }()
		go func() { serveErr <- (&loopServer{h: handler}).serve(ln) }()
	}
	log.Printf("gateway on http://%s/mcp in front of %s (fast path: %v, own loop: %v)", addr, upURL, fast, serveLoop)
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		_ = hc.Stop(context.Background())
		return err
	}
	return hc.Stop(context.Background())
}
