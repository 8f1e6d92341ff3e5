package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Helix to Helix over Streamable HTTP: a call of a durable run's step repeated
// with the same key (the run resumed after a crash) gets the first answer and the
// tool runs once; on a stateless server too, where each call is its own session.
func TestHelixServerAnswersARepeatedKeyOnce(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		var runs atomic.Int64
		hc := engine.NewContext("keys-server")
		hc.SetLogger(slog.New(slog.DiscardHandler))
		if err := hc.AddWorkflow(&engine.Workflow{ID: "record", FromURI: "direct://record", Processors: []engine.Processor{
			engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
				ex.In().SetBody(fmt.Sprintf("receipt %d", runs.Add(1)))
				return nil
			})}}); err != nil {
			t.Fatal(err)
		}
		sc := mcpserver.New(hc)
		hc.AddComponent("mcp-server", sc)
		if err := sc.AddServer(mcpserver.Options{ID: "keys", Addr: "127.0.0.1:0", Stateless: stateless}); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := hc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hc.Stop(ctx) })
		conn, err := client.NewConn(client.Config{Endpoint: "http://" + sc.Addr("keys").String()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		text := func(key string) string {
			t.Helper()
			cctx := ctx
			if key != "" {
				cctx = durable.WithKey(ctx, key)
			}
			res, err := conn.CallTool(cctx, "record", nil)
			if err != nil {
				t.Fatal(err)
			}
			return res.Content[0].(*sdk.TextContent).Text
		}
		first := text("run-5/1/0")
		if again := text("run-5/1/0"); again != first || runs.Load() != 1 {
			t.Fatalf("stateless=%v: repeat answered %q (first %q), %d runs", stateless, again, first, runs.Load())
		}
		text("run-5/2/0")
		text("")
		if runs.Load() != 3 {
			t.Fatalf("stateless=%v: %d runs, want 3", stateless, runs.Load())
		}
	}
}

// A keyed call whose client goes away while the tool runs (the calling process
// was killed: its HTTP request ends) still runs to its end on the Helix server,
// and the repeat gets its answer instead of running the tool a second time.
func TestHelixServerFinishesACutOffKeyedCall(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	release := make(chan struct{})
	hc := engine.NewContext("cut-server")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	if err := hc.AddWorkflow(&engine.Workflow{ID: "record", FromURI: "direct://record", Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody(fmt.Sprintf("receipt %d", runs.Add(1)))
			<-release
			return nil
		}),
		// A second step: a run cut off with its caller would stop before it.
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody(fmt.Sprint(ex.In().Body(), " finished"))
			return nil
		})}}); err != nil {
		t.Fatal(err)
	}
	sc := mcpserver.New(hc)
	hc.AddComponent("mcp-server", sc)
	if err := sc.AddServer(mcpserver.Options{ID: "cut", Addr: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	endpoint := "http://" + sc.Addr("cut").String()
	first, err := client.NewConn(client.Config{Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(durable.WithKey(context.Background(), "run-8/1/0"))
	failed := make(chan error, 1)
	go func() {
		_, err := first.CallTool(ctx, "record", nil)
		failed <- err
	}()
	testtools.Eventually(t, "the tool runs", func() bool { return runs.Load() == 1 })
	cancel()
	if err := <-failed; err == nil {
		t.Fatal("the cut-off call succeeded")
	}
	_ = first.Close()
	close(release)

	again, err := client.NewConn(client.Config{Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Close() })
	res, err := again.CallTool(durable.WithKey(context.Background(), "run-8/1/0"), "record", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*sdk.TextContent).Text; got != "receipt 1 finished" || runs.Load() != 1 {
		t.Fatalf("the repeat answered %q after %d runs", got, runs.Load())
	}
}
