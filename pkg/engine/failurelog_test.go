package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// jsonLog is a concurrency-safe buffer of JSON log records.
type jsonLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *jsonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// records returns the decoded records whose msg is one of msgs (all when none).
func (l *jsonLog) records(t *testing.T, msgs ...string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if len(msgs) == 0 {
			out = append(out, r)
			continue
		}
		for _, m := range msgs {
			if r["msg"] == m {
				out = append(out, r)
			}
		}
	}
	return out
}

// infoContext is a context logging JSON at the default level (info).
func infoContext(logs *jsonLog) *engine.Context {
	hc := engine.NewContext("t")
	hc.SetLogger(slog.New(slog.NewJSONHandler(logs, nil)))
	return hc
}

func TestFailedExchangeIsLoggedOnceAtWarn(t *testing.T) {
	var logs jsonLog
	hc := infoContext(&logs)
	fail := true
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "orders", FromURI: "direct://orders",
		Processors: []engine.Processor{
			namedStep{name: "helix.yaml:9:9 process", f: func(context.Context, *exchange.Exchange) error {
				if fail {
					return errors.New("unknown binary op: string + int (postgres://app:s3cret@db/x)")
				}
				return nil
			}},
		}}))
	startContext(t, hc)

	ex := exchange.NewWithBody(exchange.InOut, "x")
	if err := hc.Run(context.Background(), "orders", ex); err == nil {
		t.Fatal("the run did not fail")
	}
	recs := logs.records(t)
	if len(recs) != 1 {
		t.Fatalf("want one log line for the failed exchange, got %d: %v", len(recs), recs)
	}
	r := recs[0]
	if r["level"] != "WARN" || r["msg"] != engine.FailureLogMessage {
		t.Errorf("level, msg = %v, %v; want WARN, %q", r["level"], r["msg"], engine.FailureLogMessage)
	}
	if r["workflow"] != "orders" || r["step"] != "helix.yaml:9:9 process" || r["exchange"] != ex.ID() {
		t.Errorf("fields: %v", r)
	}
	msg, _ := r["error"].(string)
	if !strings.Contains(msg, "unknown binary op: string + int") || strings.Contains(msg, "s3cret") {
		t.Errorf("error = %q: want the message, without the password", msg)
	}

	fail = false
	if err := hc.Run(context.Background(), "orders", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
		t.Fatal(err)
	}
	if n := len(logs.records(t)); n != 1 {
		t.Errorf("a successful exchange logged at info level: %d lines", n)
	}
}

func TestFailureInNestedWorkflowIsLoggedOnceWithStepPath(t *testing.T) {
	var logs jsonLog
	hc := infoContext(&logs)
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "inner", FromURI: "direct://inner",
		Processors: []engine.Processor{namedStep{name: "b.yaml:5:9 process", f: func(context.Context, *exchange.Exchange) error {
			return errors.New("inner broke")
		}}}}))
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "outer", FromURI: "direct://outer",
		Processors: []engine.Processor{namedStep{name: "a.yaml:7:9 to", f: engine.NewTarget(hc, "direct://inner").Process}}}))
	startContext(t, hc)
	ex := exchange.NewWithBody(exchange.InOut, "x")
	if err := hc.Run(context.Background(), "outer", ex); err == nil {
		t.Fatal("the run did not fail")
	}
	recs := logs.records(t)
	if len(recs) != 1 {
		t.Fatalf("want one line for one failed exchange, got %d: %v", len(recs), recs)
	}
	if recs[0]["workflow"] != "outer" || recs[0]["step"] != "a.yaml:7:9 to > b.yaml:5:9 process" {
		t.Errorf("fields: %v", recs[0])
	}
}

func TestPanickingExchangeIsLoggedOnceAtError(t *testing.T) {
	var logs jsonLog
	hc := infoContext(&logs)
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "p", FromURI: "direct://p",
		Processors: []engine.Processor{namedStep{name: "s", f: func(context.Context, *exchange.Exchange) error {
			panic("boom")
		}}}}))
	startContext(t, hc)
	if err := hc.Run(context.Background(), "p", exchange.NewWithBody(exchange.InOut, "x")); err == nil {
		t.Fatal("the run did not fail")
	}
	recs := logs.records(t)
	if len(recs) != 1 || recs[0]["level"] != "ERROR" || !strings.Contains(recs[0]["error"].(string), "boom") {
		t.Fatalf("want one ERROR line naming the panic, got %v", recs)
	}
}

func TestFailureFloodIsRateLimitedAndCounted(t *testing.T) {
	var logs jsonLog
	hc := infoContext(&logs)
	hc.SetFailureLogLimit(engine.FailureLogLimit{PerSecond: 0.001, Burst: 5, SummaryEvery: time.Hour})
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "flood", FromURI: "direct://flood",
		Processors: []engine.Processor{namedStep{name: "s", f: func(context.Context, *exchange.Exchange) error {
			return errors.New("nope")
		}}}}))
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "other", FromURI: "direct://other",
		Processors: []engine.Processor{namedStep{name: "s", f: func(context.Context, *exchange.Exchange) error {
			return errors.New("other nope")
		}}}}))
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/4; i++ {
				_ = hc.Run(context.Background(), "flood", exchange.NewWithBody(exchange.InOut, "x"))
			}
		}()
	}
	wg.Wait()
	// Another workflow has its own bucket: the flood does not hide its failures.
	_ = hc.Run(context.Background(), "other", exchange.NewWithBody(exchange.InOut, "x"))
	if got := len(logs.records(t, engine.FailureLogMessage)); got != 5+1 {
		t.Errorf("failure lines = %d, want the burst (5) of the flood and 1 of the other workflow", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	sums := logs.records(t, engine.FailuresSuppressedMessage)
	if len(sums) != 1 {
		t.Fatalf("want one summary of the suppressed failures at stop, got %v", sums)
	}
	if sums[0]["workflow"] != "flood" || sums[0]["suppressed"] != float64(n-5) || sums[0]["level"] != "WARN" {
		t.Errorf("summary: %v, want workflow flood, suppressed %d", sums[0], n-5)
	}
}

func TestSuppressedFailuresAreSummarisedPeriodically(t *testing.T) {
	var logs jsonLog
	hc := infoContext(&logs)
	hc.SetFailureLogLimit(engine.FailureLogLimit{PerSecond: 0.001, Burst: 1, SummaryEvery: 50 * time.Millisecond})
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "f", FromURI: "direct://f",
		Processors: []engine.Processor{namedStep{name: "s", f: func(context.Context, *exchange.Exchange) error {
			return errors.New("nope")
		}}}}))
	startContext(t, hc)
	for i := 0; i < 10; i++ {
		_ = hc.Run(context.Background(), "f", exchange.NewWithBody(exchange.InOut, "x"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(logs.records(t, engine.FailuresSuppressedMessage)) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	sums := logs.records(t, engine.FailuresSuppressedMessage)
	if len(sums) != 1 || sums[0]["suppressed"] != float64(9) {
		t.Fatalf("want a summary of 9 suppressed failures while the engine runs, got %v", sums)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPanicInNestedWorkflowIsLoggedOnceWhereItHappened(t *testing.T) {
	var logs jsonLog
	hc := infoContext(&logs)
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "inner", FromURI: "direct://inner",
		Processors: []engine.Processor{namedStep{name: "b.yaml:5:9 process", f: func(context.Context, *exchange.Exchange) error {
			panic("inner boom")
		}}}}))
	// The caller recovers (as an agent does when a tool fails): the panic must still be seen.
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "recovers", FromURI: "direct://recovers",
		Processors: []engine.Processor{namedStep{name: "a.yaml:7:9 to", f: func(ctx context.Context, ex *exchange.Exchange) error {
			_ = engine.NewTarget(hc, "direct://inner").Process(ctx, ex)
			ex.SetException(nil)
			return nil
		}}}}))
	must(t, hc.AddWorkflow(&engine.Workflow{ID: "propagates", FromURI: "direct://propagates",
		Processors: []engine.Processor{namedStep{name: "a.yaml:9:9 to", f: engine.NewTarget(hc, "direct://inner").Process}}}))
	startContext(t, hc)
	if err := hc.Run(context.Background(), "recovers", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
		t.Fatal(err)
	}
	if err := hc.Run(context.Background(), "propagates", exchange.NewWithBody(exchange.InOut, "x")); err == nil {
		t.Fatal("the run did not fail")
	}
	recs := logs.records(t)
	if len(recs) != 2 {
		t.Fatalf("want one line per panic, got %d: %v", len(recs), recs)
	}
	for _, r := range recs {
		if r["level"] != "ERROR" || r["workflow"] != "inner" || r["step"] != "b.yaml:5:9 process" {
			t.Errorf("line: %v", r)
		}
	}
}
