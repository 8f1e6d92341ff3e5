package client_test

import (
	"context"
	"log/slog"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkMCPClientOverhead measures what Helix's mcp:// producer costs per tool
// call beyond the go-sdk client it is built on: the same echo tools/call against the
// same server (Helix's MCP server in this process, over loopback Streamable HTTP),
// once as a bare go-sdk ClientSession.CallTool loop (gosdk) and once as an exchange
// sent through a workflow direct://call → mcp://…/echo (helix). The server's CPU is
// in both figures alike, so cpu-µs/call of helix minus that of gosdk is Helix's
// own overhead per call (issue 17: ≤ 40 µs). scripts/bench-all.sh reports it as the
// median over rounds of the difference within a round, with GOMAXPROCS=1 (one P: the
// process's CPU is then the call's work, without the idle GC workers and cross-thread
// wake-ups that make two-P figures vary by tens of µs):
//
//	go test -c -o client.test ./internal/component/mcp/client/
//	for i in $(seq 9); do GOMAXPROCS=1 ./client.test -test.run '^$' -test.bench MCPClientOverhead -test.benchtime 3s; done
func BenchmarkMCPClientOverhead(b *testing.B) {
	url := echoServer(b)
	b.Run("gosdk", func(b *testing.B) {
		ctx := context.Background()
		client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		params := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
		measureCalls(b, func() error {
			res, err := cs.CallTool(ctx, params)
			if err == nil && (res.IsError || len(res.Content) != 1) {
				b.Fatalf("unexpected result %+v", res)
			}
			return err
		})
	})
	b.Run("helix", func(b *testing.B) {
		h := newClientHarness(b, "mcp://"+hostPort(b, url)+"/mcp/echo")
		ctx := context.Background()
		measureCalls(b, func() error {
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{"text": "hello"})
			if err := h.hc.Send(ctx, "direct://call", ex); err != nil {
				return err
			}
			if got := ex.In().Body(); got != "hello" {
				b.Fatalf("reply %#v, want hello", got)
			}
			return nil
		})
	})
}

// measureCalls runs call b.N times and reports the process's CPU per call
// (user+system, both ends of the loopback connection).
func measureCalls(b *testing.B, call func() error) {
	if err := call(); err != nil { // the session and the connection are set up
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/call")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// echoServer serves the echo workflow as a tool from Helix's MCP server and returns
// its base URL (http://host:port).
func echoServer(b *testing.B) string {
	hc := engine.NewContext("bench-server")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	if err := hc.AddWorkflow(testtools.EchoWorkflow()); err != nil {
		b.Fatal(err)
	}
	sc := mcpserver.New(hc)
	hc.AddComponent("mcp-server", sc)
	if err := sc.AddServer(mcpserver.Options{ID: "bench", Addr: "127.0.0.1:0"}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = hc.Stop(ctx) })
	return "http://" + sc.Addr("bench").String()
}
