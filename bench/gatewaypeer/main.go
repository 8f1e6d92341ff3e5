// Command gatewaypeer is the gateway's relay in miniature, built from the
// gateway's own parts: Helix's Streamable HTTP transport serving the tools of
// one upstream, reached through the upstream pool (internal/gateway/upstream),
// each call relayed either by the fast relay (internal/gateway/fastrelay) or by decoding through the go-sdk client session.
// It measures the relay where a full helix gateway is not at hand; the
// benchmark script runs it as another target (BENCHMARKS.md says which figures
// come from it).
//
//	gatewaypeer -addr 127.0.0.1:3111 -upstream http://127.0.0.1:3102/mcp [-fast=false]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/fastrelay"
	"github.com/arvenza/helix/internal/gateway/upstream"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3111", "listen address")
	upURL := flag.String("upstream", "", "the upstream's Streamable HTTP endpoint")
	fast := flag.Bool("fast", true, "relay plain tools/call with the fast relay (false: decode through the go-sdk client session)")
	debug := flag.String("debug", "", "address of /debug/pprof/ (none when empty)")
	flag.Parse()
	if *debug != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		go func() { log.Println(http.ListenAndServe(*debug, mux)) }()
	}
	if err := run(*addr, *upURL, *fast); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaypeer:", err)
		os.Exit(1)
	}
}

func run(addr, upURL string, fast bool) error {
	if upURL == "" {
		return fmt.Errorf("-upstream is required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	pool, err := upstream.New(config.UpstreamConfig{ID: "up", URL: upURL, Health: config.HealthConfig{Interval: -1}}, nil, logger)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	probe, err := pool.Session(ctx, gateway.SessionKey{Downstream: "discovery"}, nil)
	if err != nil {
		return err
	}
	tools, err := probe.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	pool.Release(gateway.SessionKey{Downstream: "discovery"})

	key := func(s *sdk.ServerSession) gateway.SessionKey {
		if s == nil {
			return gateway.SessionKey{}
		}
		return gateway.SessionKey{Downstream: s.ID()}
	}
	decoding := func(ctx context.Context, s *sdk.ServerSession, name string, args json.RawMessage) (*sdk.CallToolResult, error) {
		var res *sdk.CallToolResult
		err := pool.Call(ctx, key(s), nil, func(ctx context.Context, cs *sdk.ClientSession) error {
			var err error
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
			return err
		})
		return res, err
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "gatewaypeer", Version: "1"}, nil)
	for _, t := range tools.Tools {
		srv.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return decoding(ctx, req.Session, req.Params.Name, req.Params.Arguments)
		})
	}
	fastCalls := transport.NewFastToolCalls(func(ctx context.Context, _ *http.Request, call *transport.ToolCall) (*sdk.CallToolResult, error) {
		return decoding(ctx, call.Session, call.Name, call.Args)
	}, nil)
	if fast {
		relay := fastrelay.New(fastrelay.Options{})
		fastCalls.AnswerRaw(func(ctx context.Context, _ *http.Request, call *transport.ToolCall) (json.RawMessage, bool, error) {
			var reply fastrelay.Reply
			err := pool.Call(ctx, key(call.Session), nil, func(ctx context.Context, cs *sdk.ClientSession) error {
				url, hc, ok := pool.FastRoute(cs)
				if !ok {
					return fmt.Errorf("no fast route to the upstream")
				}
				var err error
				reply, err = relay.CallTool(ctx, &fastrelay.Upstream{URL: url, Client: hc, SessionID: cs.ID(),
					ProtocolVersion: cs.InitializeResult().ProtocolVersion}, call.Name, call.Args)
				return err
			})
			if err == nil && reply.Error != nil {
				err = reply.Error
			}
			res := reply.Result
			return res, true, err
		})
	}
	h := transport.NewStreamableHandler(srv, &transport.Options{Fast: fastCalls})
	log.Printf("gateway peer on http://%s/mcp in front of %s (fast relay: %v)", addr, upURL, fast)
	return http.ListenAndServe(addr, h)
}
