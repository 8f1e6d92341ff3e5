package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// namedStep is a processor with a step name, as config-built steps have.
type namedStep struct {
	name string
	f    func(ctx context.Context, ex *exchange.Exchange) error
}

func (s namedStep) Name() string { return s.name }
func (s namedStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	return s.f(ctx, ex)
}

func startContext(t *testing.T, hc *engine.Context) {
	t.Helper()
	if err := hc.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := hc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

func TestErrorHandlerRedelivery(t *testing.T) {
	cases := []struct {
		name          string
		redeliveries  int
		failures      int // how many runs fail before one succeeds
		wantErr       bool
		wantRuns      int
		wantLastCount any // HelixRedeliveryCount header after the exchange ends
	}{
		{name: "no redelivery configured", redeliveries: 0, failures: 1, wantErr: true, wantRuns: 1, wantLastCount: nil},
		{name: "succeeds on second redelivery", redeliveries: 3, failures: 2, wantErr: false, wantRuns: 3, wantLastCount: 2},
		{name: "exhausted", redeliveries: 2, failures: 10, wantErr: true, wantRuns: 3, wantLastCount: 2},
		{name: "never fails", redeliveries: 2, failures: 0, wantErr: false, wantRuns: 1, wantLastCount: nil},
		{name: "forever until it succeeds", redeliveries: -1, failures: 7, wantErr: false, wantRuns: 8, wantLastCount: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := engine.NewContext("t")
			var runs atomic.Int32
			var seen []any
			step := namedStep{name: "flaky", f: func(_ context.Context, ex *exchange.Exchange) error {
				n := runs.Add(1)
				seen = append(seen, ex.In().Header(exchange.HeaderRedeliveryCount))
				if int(n) <= tc.failures {
					return errors.New("boom")
				}
				return nil
			}}
			after := 0
			wf := &engine.Workflow{ID: "wf", Processors: []engine.Processor{step, engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error {
				after++
				return nil
			})}, ErrorHandler: engine.NewErrorHandler(hc, engine.ErrorHandlerOptions{MaximumRedeliveries: tc.redeliveries, RedeliveryDelay: time.Millisecond})}
			if err := hc.AddWorkflow(wf); err != nil {
				t.Fatal(err)
			}
			startContext(t, hc)
			ex := exchange.NewWithBody(exchange.InOut, "x")
			err := hc.Run(context.Background(), "wf", ex)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				var se *engine.StepError
				if !errors.As(err, &se) || se.Step != "flaky" || !strings.Contains(err.Error(), "boom") {
					t.Errorf("error %v should be a StepError for step flaky wrapping boom", err)
				}
				if after != 0 {
					t.Errorf("the next step ran %d times after an unrecovered failure", after)
				}
			} else if after != 1 {
				t.Errorf("the next step ran %d times, want 1", after)
			}
			if got := int(runs.Load()); got != tc.wantRuns {
				t.Errorf("runs = %d, want %d", got, tc.wantRuns)
			}
			// Each run sees the redelivery count of that attempt: nil, 1, 2 …
			for i, v := range seen {
				var want any
				if i > 0 {
					want = i
				}
				if v != want {
					t.Errorf("run %d saw HelixRedeliveryCount=%v, want %v", i, v, want)
				}
			}
			if got := ex.In().Header(exchange.HeaderRedeliveryCount); got != tc.wantLastCount {
				t.Errorf("final HelixRedeliveryCount = %v, want %v", got, tc.wantLastCount)
			}
		})
	}
}

func TestErrorHandlerDeadLetter(t *testing.T) {
	hc := engine.NewContext("t")
	dead := &testtools.Recorder{}
	if err := hc.AddWorkflow(&engine.Workflow{ID: "dead", FromURI: "direct://dead", Processors: []engine.Processor{dead}}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	wf := &engine.Workflow{
		ID: "orders",
		Processors: []engine.Processor{
			// Changes the body before the failure, so the dead letter must carry the
			// original, not this.
			namedStep{name: "helix.yaml:10:9 transform", f: func(_ context.Context, ex *exchange.Exchange) error {
				ex.In().SetBody(map[string]any{"changed": true})
				ex.In().SetHeader("Trace", "abc")
				return nil
			}},
			namedStep{name: "helix.yaml:14:9 process", f: func(_ context.Context, ex *exchange.Exchange) error {
				runs.Add(1)
				ex.SetException(errors.New("value must be non-negative"))
				return nil
			}},
		},
		ErrorHandler: engine.NewErrorHandler(hc, engine.ErrorHandlerOptions{MaximumRedeliveries: 2, DeadLetterURI: "direct://dead"}),
	}
	if err := hc.AddWorkflow(wf); err != nil {
		t.Fatal(err)
	}
	startContext(t, hc)

	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"value": -1})
	err := hc.Run(context.Background(), "orders", ex)
	// The error propagates after dead-lettering (spec §10.1: the tool still reports isError).
	if err == nil || !strings.Contains(err.Error(), "value must be non-negative") {
		t.Fatalf("err = %v, want the step's error to propagate", err)
	}
	if ex.Exception() == nil {
		t.Error("the exchange should keep its exception")
	}
	if runs.Load() != 3 {
		t.Errorf("failing step ran %d times, want 3 (1 + 2 redeliveries)", runs.Load())
	}
	got := dead.All()
	if len(got) != 1 {
		t.Fatalf("dead letter received %d exchanges, want 1", len(got))
	}
	dl := got[0]
	body, ok := dl.In().Body().(map[string]any)
	if !ok || body["value"] != -1 || len(body) != 1 {
		t.Errorf("dead letter body = %#v, want the original {value: -1}", dl.In().Body())
	}
	checks := map[string]any{
		exchange.HeaderExceptionMessage: "helix.yaml:14:9 process: value must be non-negative",
		exchange.HeaderFailedStep:       "helix.yaml:14:9 process",
		exchange.HeaderFailedWorkflow:   "orders",
		exchange.HeaderRedeliveryCount:  2,
		"Trace":                         "abc", // other headers travel with the copy
	}
	for h, want := range checks {
		if got := dl.In().Header(h); got != want {
			t.Errorf("dead letter header %s = %#v, want %#v", h, got, want)
		}
	}
	if dl.Pattern() != exchange.InOnly {
		t.Errorf("dead letter pattern = %v, want InOnly", dl.Pattern())
	}
	if dl.ID() == ex.ID() {
		t.Error("the dead letter must be a copy with its own id")
	}
}

func TestErrorHandlerDeadLetterNestedWorkflow(t *testing.T) {
	// The inner workflow's handler must report the inner workflow and the body the
	// inner workflow received, not the outer caller's.
	hc := engine.NewContext("t")
	dead := &testtools.Recorder{}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(hc.AddWorkflow(&engine.Workflow{ID: "dead", FromURI: "direct://dead", Processors: []engine.Processor{dead}}))
	must(hc.AddWorkflow(&engine.Workflow{
		ID: "inner", FromURI: "direct://inner",
		Processors: []engine.Processor{
			engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
				ex.In().SetBody("inner changed it")
				return errors.New("inner failed")
			}),
		},
		ErrorHandler: engine.NewErrorHandler(hc, engine.ErrorHandlerOptions{DeadLetterURI: "direct://dead"}),
	}))
	must(hc.AddWorkflow(&engine.Workflow{
		ID: "outer",
		Processors: []engine.Processor{
			engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
				ex.In().SetBody("sent to inner")
				return nil
			}),
			engine.NewTarget(hc, "direct://inner"),
		},
	}))
	startContext(t, hc)
	err := hc.Run(context.Background(), "outer", exchange.NewWithBody(exchange.InOut, "outer original"))
	if err == nil || !strings.Contains(err.Error(), "inner failed") {
		t.Fatalf("err = %v, want inner failed", err)
	}
	got := dead.All()
	if len(got) != 1 {
		t.Fatalf("dead letters = %d, want 1", len(got))
	}
	if b := got[0].In().Body(); b != "sent to inner" {
		t.Errorf("dead letter body = %v, want the body inner received", b)
	}
	if w := got[0].In().HeaderString(exchange.HeaderFailedWorkflow); w != "inner" {
		t.Errorf("HelixFailedWorkflow = %q, want inner", w)
	}
}

func TestErrorHandlerDeadLetterFailureIsReported(t *testing.T) {
	hc := engine.NewContext("t")
	if err := hc.AddWorkflow(&engine.Workflow{
		ID:           "wf",
		Processors:   []engine.Processor{engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return errors.New("step failed") })},
		ErrorHandler: engine.NewErrorHandler(hc, engine.ErrorHandlerOptions{DeadLetterURI: "direct://nobody-listens"}),
	}); err != nil {
		t.Fatal(err)
	}
	startContext(t, hc)
	err := hc.Run(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "x"))
	if err == nil || !strings.Contains(err.Error(), "step failed") || !strings.Contains(err.Error(), "dead letter direct://nobody-listens") {
		t.Fatalf("err = %v, want both the step error and the dead letter error", err)
	}
}

func TestErrorHandlerRedeliveryDelayIsCancellable(t *testing.T) {
	hc := engine.NewContext("t")
	var runs atomic.Int32
	if err := hc.AddWorkflow(&engine.Workflow{
		ID: "wf",
		Processors: []engine.Processor{engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error {
			runs.Add(1)
			return errors.New("down")
		})},
		ErrorHandler: engine.NewErrorHandler(hc, engine.ErrorHandlerOptions{MaximumRedeliveries: 5, RedeliveryDelay: time.Hour}),
	}); err != nil {
		t.Fatal(err)
	}
	startContext(t, hc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hc.Run(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x")) }()
	// Let the first run fail and the handler start waiting, then cancel.
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "down") {
			t.Errorf("err = %v, want the step error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the exchange did not end the redelivery wait")
	}
	if runs.Load() != 1 {
		t.Errorf("runs = %d, want 1 (no redelivery after cancellation)", runs.Load())
	}
}

func TestErrorHandlerDelay(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		opts engine.ErrorHandlerOptions
		want []time.Duration // delays before redelivery 1, 2, 3 …
	}{
		{"constant (multiplier 0)", engine.ErrorHandlerOptions{RedeliveryDelay: 100 * ms}, []time.Duration{100 * ms, 100 * ms, 100 * ms}},
		{"constant (multiplier 1)", engine.ErrorHandlerOptions{RedeliveryDelay: 100 * ms, BackoffMultiplier: 1}, []time.Duration{100 * ms, 100 * ms}},
		{"exponential", engine.ErrorHandlerOptions{RedeliveryDelay: 100 * ms, BackoffMultiplier: 2}, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms}},
		{"capped", engine.ErrorHandlerOptions{RedeliveryDelay: 100 * ms, BackoffMultiplier: 3, MaximumRedeliveryDelay: 500 * ms}, []time.Duration{100 * ms, 300 * ms, 500 * ms, 500 * ms}},
		{"no delay", engine.ErrorHandlerOptions{BackoffMultiplier: 2}, []time.Duration{0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				if got := tc.opts.Delay(i + 1); got != want {
					t.Errorf("Delay(%d) = %s, want %s", i+1, got, want)
				}
			}
		})
	}
	// A huge attempt number must neither overflow nor go negative.
	if d := (engine.ErrorHandlerOptions{RedeliveryDelay: time.Second, BackoffMultiplier: 10}).Delay(1000); d <= 0 {
		t.Errorf("Delay(1000) = %s, want a large positive duration", d)
	}
}

func TestErrorHandlerOptionsValidate(t *testing.T) {
	cases := []struct {
		opts    engine.ErrorHandlerOptions
		wantErr string
	}{
		{engine.ErrorHandlerOptions{MaximumRedeliveries: 3, RedeliveryDelay: time.Second, BackoffMultiplier: 2}, ""},
		{engine.ErrorHandlerOptions{MaximumRedeliveries: -1}, ""}, // forever
		{engine.ErrorHandlerOptions{MaximumRedeliveries: -2}, "maximum-redeliveries"},
		{engine.ErrorHandlerOptions{RedeliveryDelay: -time.Second}, "redelivery-delay"},
		{engine.ErrorHandlerOptions{BackoffMultiplier: -2}, "backoff-multiplier"},
		{engine.ErrorHandlerOptions{MaximumRedeliveryDelay: -1}, "maximum-redelivery-delay"},
	}
	for _, tc := range cases {
		err := tc.opts.Validate()
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("Validate(%+v) = %v, want nil", tc.opts, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Validate(%+v) = %v, want an error about %s", tc.opts, err, tc.wantErr)
		}
	}
}
