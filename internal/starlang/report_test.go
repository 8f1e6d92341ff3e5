package starlang

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/report"
)

type progressReport struct {
	Current, Total float64
	Message        string
}

type logReport struct {
	Level report.Level
	Data  any
}

// reportRecorder collects what scripts report.
type reportRecorder struct {
	mu       sync.Mutex
	progress []progressReport
	logs     []logReport
}

func (r *reportRecorder) context() context.Context {
	return report.WithReporter(context.Background(), report.Func{
		OnProgress: func(_ context.Context, current, total float64, message string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.progress = append(r.progress, progressReport{current, total, message})
		},
		OnLog: func(_ context.Context, level report.Level, _ string, data any) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.logs = append(r.logs, logReport{level, data})
		},
	})
}

func TestProgressAndLogReport(t *testing.T) {
	src := `progress(0, 100)
log("info", "Tool execution started")
progress(50, 100, "half way")
log("WARN", {"rows": sizeOf(payload)})
progress(2.5)
progress(current=100, total=100.0, message=None)
log(level="debug", message="done")
"ok"`
	s := compile(t, src, nil)
	rec := &reportRecorder{}
	res, err := s.Eval(rec.context(), input{body: []any{1, 2}}.exchange())
	if err != nil {
		t.Fatal(err)
	}
	if res.Value != "ok" {
		t.Fatalf("value %v", res.Value)
	}
	wantProgress := []progressReport{{0, 100, ""}, {50, 100, "half way"}, {2.5, 0, ""}, {100, 100, ""}}
	if !reflect.DeepEqual(rec.progress, wantProgress) {
		t.Errorf("progress %+v, want %+v", rec.progress, wantProgress)
	}
	wantLogs := []logReport{
		{report.LevelInfo, "Tool execution started"},
		{report.LevelWarning, map[string]any{"rows": int64(2)}},
		{report.LevelDebug, "done"},
	}
	if !reflect.DeepEqual(rec.logs, wantLogs) {
		t.Errorf("logs %+v, want %+v", rec.logs, wantLogs)
	}
}

func TestProgressAndLogWithoutReporter(t *testing.T) {
	s := compile(t, "progress(1, 2, \"x\")\nlog(\"error\", \"nobody listens\")\n1", nil)
	res, err := s.Eval(context.Background(), input{}.exchange())
	if err != nil || res.Value != int64(1) {
		t.Fatalf("value %v, error %v", res, err)
	}
}

func TestProgressAndLogErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`progress()`, "missing argument for current"},
		{`progress("1")`, "current must be an int or float, not string"},
		{`progress(-1)`, "not below 0"},
		{`progress(float("nan"))`, "finite"},
		{`progress(1, "ten")`, "total must be an int or float"},
		{`progress(1, float("inf"))`, "finite"},
		{`progress(1, 2, 3)`, "message must be a string or None, not int"},
		{`progress(1, 2, "m", 4)`, "got 4 arguments"},
		{`log("info")`, "missing argument for message"},
		{`log("loud", "x")`, `unknown log level "loud"`},
		{`log(1, "x")`, "for parameter level: got int, want string"},
		{`log("info", lambda: 1)`, "log: message"},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			rec := &reportRecorder{}
			_, err := compile(t, tc.src, nil).Eval(rec.context(), input{}.exchange())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "helix.yaml:10:") {
				t.Errorf("error %q has no script position", err)
			}
			if len(rec.progress)+len(rec.logs) != 0 {
				t.Errorf("a refused call reported: %+v %+v", rec.progress, rec.logs)
			}
		})
	}
}

// The reporter reaches every evaluation through its own context: concurrent
// evaluations of one Script report to their own callers only.
func TestReportsGoToTheirOwnCaller(t *testing.T) {
	s := compile(t, `progress(payload)`, nil)
	var wg sync.WaitGroup
	recs := make([]*reportRecorder, 8)
	for i := range recs {
		recs[i] = &reportRecorder{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Eval(recs[i].context(), input{body: i}.exchange()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, r := range recs {
		if len(r.progress) != 1 || r.progress[0].Current != float64(i) {
			t.Errorf("caller %d got %+v", i, r.progress)
		}
	}
}

func TestReportBuiltinsArePredeclared(t *testing.T) {
	names := strings.Join(Predeclared(), ",")
	for _, n := range []string{"progress", "log"} {
		if !strings.Contains(","+names+",", ","+n+",") {
			t.Errorf("Predeclared() lacks %s: %s", n, names)
		}
	}
	// A script may still use the names for its own values.
	res, err := compile(t, "log = [1]\nprogress = 2\nlog ++ [progress]", nil).Eval(context.Background(), input{}.exchange())
	if err != nil || !reflect.DeepEqual(res.Value, []any{int64(1), int64(2)}) {
		t.Fatalf("shadowing: %v %v", res, err)
	}
}
