package capture_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/console/capture"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkCapture is the cost the capture adds to one exchange of a
// one-step workflow: off (no tracer: the console off), skipped (the console
// on, the exchange not captured: over the per-second cap or not sampled),
// captured (its input and the step's result recorded), and captured with a
// live subscriber. Compare each with off.
func BenchmarkCapture(b *testing.B) {
	body := map[string]any{"name": "Ada", "items": []any{"a", "b", "c"}, "note": strings.Repeat("n", 1000)}
	step := step{"helix.yaml:7:9 transform", func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(map[string]any{"greeting": "Hello"})
		return nil
	}}
	for _, tc := range []struct {
		name string
		c    *capture.Capture
		sub  bool
	}{
		{"off", nil, false},
		{"skipped", capture.New(capture.Options{Sample: 1e-9, PerSecond: -1}), false},
		{"captured", capture.New(capture.Options{PerSecond: -1}), false},
		{"captured-with-feed", capture.New(capture.Options{PerSecond: -1}), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hc := engine.NewContext("bench")
			hc.SetLogger(slog.New(slog.DiscardHandler))
			if err := hc.AddWorkflow(&engine.Workflow{ID: "w", Processors: []engine.Processor{step}}); err != nil {
				b.Fatal(err)
			}
			if tc.c != nil {
				hc.SetTracer(tc.c)
			}
			if err := hc.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer hc.Stop(context.Background())
			if tc.sub {
				sub := tc.c.Subscribe(64)
				done := make(chan struct{})
				go func() {
					for {
						select {
						case <-sub.C():
						case <-done:
							return
						}
					}
				}()
				defer close(done)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				ex := exchange.NewWithBody(exchange.InOut, body)
				ex.In().SetHeader("Content-Type", "application/json")
				if err := hc.Run(ctx, "w", ex); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
