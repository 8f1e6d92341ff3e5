package step_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestReportsReachTheCaller runs a workflow whose steps, direct:// sub-workflow and
// parallel multicast branches report progress and log messages, with a reporter in
// the caller's context, and checks that each report arrives there once; the wiretap
// tap's reports must not (it runs on the engine's context).
func TestReportsReachTheCaller(t *testing.T) {
	tapped := &testtools.Recorder{}
	hc, _ := patternApp(t, "report.yaml", map[string]engine.Processor{"direct://tap-done": tapped})

	var mu sync.Mutex
	var progress, logs []string
	rep := report.Func{
		OnProgress: func(_ context.Context, current, total float64, message string) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, fmt.Sprintf("%g/%g %s", current, total, message))
		},
		OnLog: func(_ context.Context, level report.Level, _ string, data any) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprintf("%s %v", level, data))
		},
	}
	ctx, cancel := context.WithTimeout(report.WithReporter(context.Background(), rep), 60*time.Second)
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, "x")
	if err := hc.Run(ctx, "report-all", ex); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "reply", ex.In().Body(), []any{"a", "b"})

	// Wait for the tap, so that reports it made would have arrived by now.
	deadline := time.Now().Add(30 * time.Second)
	for len(tapped.All()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the wiretap's tap did not run")
		}
		time.Sleep(10 * time.Millisecond)
	}

	mu.Lock()
	defer mu.Unlock()
	jsonEqual(t, "progress", progress, []string{"0/4 started", "2/4 ", "4/4 done"})
	sort.Strings(logs) // the branches run in parallel
	jsonEqual(t, "logs", logs, []string{"debug branch a", "info main: x", "notice sub: x", "warning map[branch:b]"})
}

// Without a reporter the same workflow runs as before.
func TestReportsWithoutReporter(t *testing.T) {
	hc, _ := patternApp(t, "report.yaml", map[string]engine.Processor{"direct://tap-done": &testtools.Recorder{}})
	ex, err := call(t, hc, "report-all", "x")
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "reply", ex.In().Body(), []any{"a", "b"})
}

// The elements of a parallel split report to the caller of the exchange.
func TestReportsFromSplitElements(t *testing.T) {
	hc, _ := patternApp(t, "report.yaml", map[string]engine.Processor{"direct://tap-done": &testtools.Recorder{}})
	var mu sync.Mutex
	var got []string
	rep := report.Func{
		OnProgress: func(_ context.Context, current, total float64, _ string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%g/%g", current, total))
		},
		OnLog: func(_ context.Context, level report.Level, _ string, data any) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%s %v", level, data))
		},
	}
	ctx, cancel := context.WithTimeout(report.WithReporter(context.Background(), rep), 60*time.Second)
	defer cancel()
	if err := hc.Run(ctx, "report-split", exchange.NewWithBody(exchange.InOut, []any{1, 2, 3})); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(got)
	jsonEqual(t, "reports", got, []string{"1/3", "2/3", "3/3", "info element 1", "info element 2", "info element 3"})
}
