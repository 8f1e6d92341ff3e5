package pattern_test

import (
	"context"
	"sort"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestSplitElementsReportToTheCaller: the elements of a parallel split run on the
// split's goroutines, with contexts derived from the exchange's, so what they report
// reaches the caller's reporter.
func TestSplitElementsReportToTheCaller(t *testing.T) {
	var mu sync.Mutex
	var got []float64
	rep := report.Func{OnProgress: func(_ context.Context, current, _ float64, _ string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, current)
	}}
	each := engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
		report.Progress(ctx, float64(ex.In().Body().(int)), 5, "")
		return nil
	})
	s, err := pattern.NewSplit(nil, pattern.SplitBody(), pattern.SplitOptions{Parallel: true, MaxConcurrency: 3}, each)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	ex := exchange.NewWithBody(exchange.InOut, []any{1, 2, 3, 4, 5})
	if err := s.Process(report.WithReporter(context.Background(), rep), ex); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Float64s(got)
	if len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("reports %v, want one per element", got)
	}
}
