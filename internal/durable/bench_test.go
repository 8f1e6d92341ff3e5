package durable_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// The overhead of a durable step. The same workflow runs durable, on SQLite and
// on PostgreSQL, and not durable ("none"), with bodies of 1 KiB, 64 KiB and
// 1 MiB, and 1 or 11 top-level steps that each set a header: the 11-step run
// less the 1-step run, divided by 10, is what one more durable step costs; the
// 1-step run is the cost of a run's start. Each operation is one whole run
// through engine.Context.Run, as a trigger runs it. Besides ns/op it reports
// the runs' p50 and p90 and, for durable runs, the checkpoint bytes per step.
// BENCHMARKS.md has the figures and the command.

// headerStep sets one header: a step that costs next to nothing itself.
type headerStep int

func (s headerStep) Name() string { return fmt.Sprintf("bench.yaml:%d:7 set-header", 10+int(s)) }
func (s headerStep) Process(_ context.Context, ex *exchange.Exchange) error {
	ex.In().SetHeader("step", int(s))
	return nil
}

func benchEngine(b *testing.B, store string, steps int) (*engine.Context, *durable.Runtime) {
	b.Helper()
	ps := make([]engine.Processor, steps)
	for i := range ps {
		ps[i] = headerStep(i)
	}
	ec := engine.NewContext("bench")
	if err := ec.AddWorkflow(&engine.Workflow{ID: "wf", Processors: ps, Durable: store != "none"}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var rt *durable.Runtime
	if store != "none" {
		opts := durable.Options{AppName: "bench", DataDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)}
		if store == "postgres" {
			opts.Store = testtools.PostgresDatabase(b)
		}
		var err error
		if rt, err = durable.New(ctx, opts); err != nil {
			b.Fatal(err)
		}
		ec.SetDurableRunner(rt)
	}
	if err := ec.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if rt != nil {
		if err := rt.Launch(ec); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		if rt != nil {
			rt.Shutdown(5 * time.Second)
		}
		_ = ec.Stop(ctx)
	})
	return ec, rt
}

func BenchmarkDurableStep(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}
	for _, store := range []string{"none", "sqlite", "postgres"} {
		for _, size := range sizes {
			for _, steps := range []int{1, 11} {
				b.Run(fmt.Sprintf("store=%s/body=%s/steps=%d", store, size.name, steps), func(b *testing.B) {
					ec, rt := benchEngine(b, store, steps)
					body := strings.Repeat("x", size.n)
					ctx := context.Background()
					// Warm up: the store's first statements (and a new PostgreSQL
					// database's caches) are not what a running instance pays.
					for range 10 {
						if err := ec.Run(ctx, "wf", exchange.NewWithBody(exchange.InOut, body)); err != nil {
							b.Fatal(err)
						}
					}
					took := make([]time.Duration, 0, 1024)
					var last string
					for b.Loop() {
						ex := exchange.NewWithBody(exchange.InOut, body)
						start := time.Now()
						if err := ec.Run(ctx, "wf", ex); err != nil {
							b.Fatal(err)
						}
						took = append(took, time.Since(start))
						last = ex.In().HeaderString(durable.HeaderRunID)
					}
					slices.Sort(took)
					b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
					b.ReportMetric(float64(took[len(took)*9/10].Nanoseconds()), "p90-ns")
					if rt == nil {
						return
					}
					recs, err := rt.Steps(ctx, last)
					if err != nil || len(recs) != steps {
						b.Fatalf("steps of run %q: %d, %v", last, len(recs), err)
					}
					total := 0
					for _, r := range recs {
						total += r.Bytes
					}
					b.ReportMetric(float64(total)/float64(len(recs)), "checkpoint-B/step")
				})
			}
		}
	}
}
