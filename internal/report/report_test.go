package report_test

import (
	"context"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/internal/testtools"
)

type recorder struct {
	mu       sync.Mutex
	progress []float64
	logs     []string
}

func (r *recorder) reporter() report.Reporter {
	return report.Func{
		OnProgress: func(_ context.Context, current, _ float64, _ string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.progress = append(r.progress, current)
		},
		OnLog: func(_ context.Context, level report.Level, _ string, data any) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.logs = append(r.logs, level.String()+":"+data.(string))
		},
	}
}

func TestWithoutReporterNothingHappens(t *testing.T) {
	ctx := context.Background()
	if report.FromContext(ctx) != nil {
		t.Fatal("background context has a reporter")
	}
	if report.WithReporter(ctx, nil) != ctx {
		t.Fatal("WithReporter(ctx, nil) must return ctx itself")
	}
	// Must not panic.
	report.Progress(ctx, 1, 2, "x")
	report.Log(ctx, report.LevelInfo, "", "x")
	report.Func{}.Progress(ctx, 1, 0, "")
	report.Func{}.Log(ctx, report.LevelInfo, "", nil)
}

func TestReporterTravelsWithDerivedContexts(t *testing.T) {
	rec := &recorder{}
	ctx := report.WithReporter(context.Background(), rec.reporter())
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	detached := context.WithoutCancel(child)

	report.Progress(ctx, 1, 3, "")
	report.Progress(child, 2, 3, "")
	report.Log(detached, report.LevelWarning, "wf", "careful")

	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); report.Progress(child, 3, 3, "") }()
	}
	wg.Wait()
	if len(rec.progress) != 10 || rec.progress[0] != 1 || rec.progress[1] != 2 {
		t.Fatalf("progress %v", rec.progress)
	}
	if len(rec.logs) != 1 || rec.logs[0] != "warning:careful" {
		t.Fatalf("logs %v", rec.logs)
	}
}

func TestLevels(t *testing.T) {
	for i, name := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		l, err := report.ParseLevel(name)
		if err != nil || l != report.Level(i) || l.String() != name {
			t.Errorf("ParseLevel(%q) = %v, %v", name, l, err)
		}
	}
	if l, err := report.ParseLevel(" WARN "); err != nil || l != report.LevelWarning {
		t.Errorf("warn: %v %v", l, err)
	}
	if _, err := report.ParseLevel("loud"); err == nil {
		t.Error("ParseLevel(loud) succeeded")
	}
	if !(report.LevelDebug < report.LevelInfo && report.LevelError < report.LevelEmergency) {
		t.Error("levels are not ordered by severity")
	}
	if s := report.Level(42).String(); s != "level(42)" {
		t.Errorf("String of an unknown level: %q", s)
	}
}

// Without a reporter, reporting is a context lookup and allocates nothing.
func TestNoReporterAllocs(t *testing.T) {
	testtools.SkipAllocsUnderRace(t)
	type otherKey struct{} // a context value of someone else's, to look past
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, 1))
	defer cancel()
	allocs := testing.AllocsPerRun(100, func() {
		report.Progress(ctx, 1, 2, "step")
		report.Log(ctx, report.LevelInfo, "", "message")
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per report without a reporter", allocs)
	}
}

type choosyReporter struct {
	report.Func
	wants bool
}

func (c choosyReporter) WantsProgress() bool { return c.wants }

func TestProgressWanted(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"no reporter", bg, false},
		{"plain reporter", report.WithReporter(bg, report.Func{}), true},
		{"reporter that wants progress", report.WithReporter(bg, choosyReporter{wants: true}), true},
		{"reporter that wants none", report.WithReporter(bg, choosyReporter{}), false},
	} {
		if got := report.ProgressWanted(tc.ctx); got != tc.want {
			t.Errorf("%s: ProgressWanted = %v, want %v", tc.name, got, tc.want)
		}
	}
}
