package pattern_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkSplit1000 splits a list of 1,000 small maps through one trivial step:
// what the split itself costs per element (copies, hand-over, collection).
func BenchmarkSplit1000(b *testing.B) {
	body := make([]any, 1000)
	for i := range body {
		body[i] = map[string]any{"id": i, "name": "item"}
	}
	step := fn(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(ex.In().Body().(map[string]any)["id"])
		return nil
	})
	for _, bc := range []struct {
		name string
		opts pattern.SplitOptions
	}{
		{"sequential", pattern.SplitOptions{}},
		{"parallel", pattern.SplitOptions{Parallel: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := pattern.NewSplit(nil, pattern.SplitBody(), bc.opts, step)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Stop(context.Background()) }()
			ex := exchange.NewWithBody(exchange.InOut, nil)
			b.ReportAllocs()
			for b.Loop() {
				ex.In().SetBody(body)
				if err := s.Process(context.Background(), ex); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
