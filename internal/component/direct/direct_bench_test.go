package direct_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkDirectRequestReply sends an InOut exchange to direct://echo through a
// started engine context and reads the reply: producer lookup (cached), the direct
// hand-off and the consumer workflow's one-step pipeline.
func BenchmarkDirectRequestReply(b *testing.B) {
	hc := engine.NewContext("bench")
	err := hc.AddWorkflow(&engine.Workflow{
		ID:      "echo",
		FromURI: "direct://echo",
		Processors: []engine.Processor{engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody("re: " + ex.In().Body().(string))
			return nil
		})},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = hc.Stop(ctx) })
	b.ReportAllocs()
	for b.Loop() {
		ex := exchange.NewWithBody(exchange.InOut, "hi")
		if err := hc.Send(ctx, "direct://echo", ex); err != nil {
			b.Fatal(err)
		}
		if ex.In().Body() != "re: hi" {
			b.Fatalf("reply %v", ex.In().Body())
		}
	}
}
