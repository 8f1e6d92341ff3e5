package pattern_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// blockUntilCancelled is a branch that only returns when its context is cancelled,
// counting how many such branches have returned.
func blockUntilCancelled(returned *atomic.Int32) engine.Processor {
	return fn(func(ctx context.Context, ex *exchange.Exchange) error {
		<-ctx.Done()
		returned.Add(1)
		return ctx.Err()
	})
}

func failWith(msg string) engine.Processor {
	return fn(func(context.Context, *exchange.Exchange) error { return errors.New(msg) })
}

// stopMulticast stops m as the engine would and fails the test if it cannot drain.
func stopMulticast(t *testing.T, m *pattern.Multicast) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

func TestMulticastCollectsInBranchOrder(t *testing.T) {
	// Branch 0 can only finish after branch 2 has: the replies arrive out of order
	// (and this only completes if the branches really run concurrently), yet the list
	// is in branch order.
	gate := make(chan struct{})
	branches := []engine.Processor{
		fn(func(ctx context.Context, ex *exchange.Exchange) error {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			ex.In().SetBody("zero")
			return nil
		}),
		setBody(map[string]any{"one": 1}),
		fn(func(_ context.Context, ex *exchange.Exchange) error {
			defer close(gate)
			ex.In().SetBody([]any{"two"})
			return nil
		}),
	}
	m := pattern.NewMulticast(engine.NewContext("t"), pattern.MulticastOptions{Parallel: true, Timeout: 30 * time.Second}, branches)
	defer stopMulticast(t, m)
	ex := exchange.NewWithBody(exchange.InOut, "in")
	ex.In().SetHeader("Keep", "yes")
	if err := m.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	want := []any{"zero", map[string]any{"one": 1}, []any{"two"}}
	if !reflect.DeepEqual(ex.In().Body(), want) {
		t.Errorf("body = %#v, want %#v", ex.In().Body(), want)
	}
	if ex.In().Header("Keep") != "yes" {
		t.Error("original headers must be kept")
	}
	if ex.In().Header(exchange.HeaderAggregateMissing) != nil {
		t.Errorf("HelixAggregateMissing = %v, want none", ex.In().Header(exchange.HeaderAggregateMissing))
	}
}

func TestMulticastSequentialRunsInOrderOnCopies(t *testing.T) {
	var mu sync.Mutex
	var order []int
	branch := func(i int) engine.Processor {
		return fn(func(_ context.Context, ex *exchange.Exchange) error {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			// Each branch sees the original body, not another branch's change.
			body := ex.In().Body().(map[string]any)
			if body["touched"] != nil {
				return errors.New("branch saw another branch's change")
			}
			body["touched"] = i
			ex.In().SetHeader("Branch", i)
			return nil
		})
	}
	m := pattern.NewMulticast(engine.NewContext("t"), pattern.MulticastOptions{}, []engine.Processor{branch(0), branch(1), branch(2)})
	defer stopMulticast(t, m)
	orig := map[string]any{"id": 7}
	ex := exchange.NewWithBody(exchange.InOut, orig)
	if err := m.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(order, []int{0, 1, 2}) {
		t.Errorf("order = %v, want [0 1 2]", order)
	}
	if _, ok := orig["touched"]; ok {
		t.Error("a branch changed the original body")
	}
	if ex.In().Header("Branch") != nil {
		t.Error("branch headers must not leak into the original exchange")
	}
	list := ex.In().Body().([]any)
	for i, v := range list {
		if v.(map[string]any)["touched"] != i {
			t.Errorf("list[%d] = %v, want the reply of branch %d", i, v, i)
		}
	}
}

func TestMulticastConcurrencyBound(t *testing.T) {
	var active, peak atomic.Int32
	branch := fn(func(_ context.Context, ex *exchange.Exchange) error {
		n := active.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		active.Add(-1)
		return nil
	})
	branches := make([]engine.Processor, 8)
	for i := range branches {
		branches[i] = branch
	}
	m := pattern.NewMulticast(engine.NewContext("t"), pattern.MulticastOptions{Parallel: true, MaxConcurrency: 2}, branches)
	defer stopMulticast(t, m)
	ex := exchange.NewWithBody(exchange.InOut, "x")
	if err := m.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("peak concurrency = %d, want at most 2", p)
	}
	if n := len(ex.In().Body().([]any)); n != 8 {
		t.Errorf("list has %d entries, want 8", n)
	}
}

func TestMulticastFailures(t *testing.T) {
	cases := []struct {
		name      string
		opts      pattern.MulticastOptions
		aggregate *pattern.AggregateOptions
		branches  func(returned *atomic.Int32) []engine.Processor
		wantErr   string
		wantBody  []any
		wantFail  any // HelixAggregateFailed
		// wantReturned is how many blocking branches must have been cancelled.
		wantReturned int32
	}{
		{
			name: "parallel: other branches go on, the lowest failed index is reported",
			opts: pattern.MulticastOptions{Parallel: true},
			branches: func(*atomic.Int32) []engine.Processor {
				return []engine.Processor{setBody("a"), failWith("first failure"), failWith("second failure"), setBody("d")}
			},
			wantErr: "multicast: branch 1: first failure",
		},
		{
			name: "sequential failure",
			branches: func(*atomic.Int32) []engine.Processor {
				return []engine.Processor{setBody("a"), failWith("nope")}
			},
			wantErr: "branch 1: nope",
		},
		{
			name: "stop on error cancels the running branches",
			opts: pattern.MulticastOptions{Parallel: true, StopOnError: true},
			branches: func(r *atomic.Int32) []engine.Processor {
				return []engine.Processor{blockUntilCancelled(r), failWith("fatal"), blockUntilCancelled(r)}
			},
			wantErr:      "branch 1: fatal",
			wantReturned: 2,
		},
		{
			name:      "aggregate tolerates a failed branch",
			opts:      pattern.MulticastOptions{Parallel: true},
			aggregate: &pattern.AggregateOptions{Strategy: "collect"},
			branches: func(*atomic.Int32) []engine.Processor {
				return []engine.Processor{setBody("a"), failWith("down"), setBody("c")}
			},
			wantBody: []any{"a", "c"},
			wantFail: []any{1},
		},
		{
			name:      "aggregate fails when every branch failed",
			opts:      pattern.MulticastOptions{Parallel: true},
			aggregate: &pattern.AggregateOptions{},
			branches: func(*atomic.Int32) []engine.Processor {
				return []engine.Processor{failWith("x down"), failWith("y down")}
			},
			wantErr: "branch 0: x down",
		},
		{
			name: "panic in a branch is an error, not a crash",
			opts: pattern.MulticastOptions{Parallel: true},
			branches: func(*atomic.Int32) []engine.Processor {
				return []engine.Processor{setBody("a"), fn(func(context.Context, *exchange.Exchange) error { panic("kaboom") })}
			},
			wantErr: "step panicked: kaboom",
		},
		{
			name: "exception left on a branch copy is its failure",
			opts: pattern.MulticastOptions{Parallel: true},
			branches: func(*atomic.Int32) []engine.Processor {
				return []engine.Processor{fn(func(_ context.Context, ex *exchange.Exchange) error {
					ex.SetException(errors.New("tool error"))
					return nil
				})}
			},
			wantErr: "branch 0: tool error",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var returned atomic.Int32
			hc := engine.NewContext("t")
			var m *pattern.Multicast
			if tc.aggregate != nil {
				var err error
				if m, err = pattern.NewMulticastAggregate(hc, tc.opts, tc.branches(&returned), *tc.aggregate); err != nil {
					t.Fatal(err)
				}
			} else {
				m = pattern.NewMulticast(hc, tc.opts, tc.branches(&returned))
			}
			ex := exchange.NewWithBody(exchange.InOut, "in")
			err := m.Process(context.Background(), ex)
			stopMulticast(t, m) // waits for cancelled branches
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if ex.In().Body() != "in" {
					t.Errorf("a failed multicast must leave the body alone, got %v", ex.In().Body())
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(ex.In().Body(), tc.wantBody) {
					t.Errorf("body = %#v, want %#v", ex.In().Body(), tc.wantBody)
				}
				if got := ex.In().Header(pattern.HeaderAggregateFailed); !reflect.DeepEqual(got, tc.wantFail) {
					t.Errorf("HelixAggregateFailed = %#v, want %#v", got, tc.wantFail)
				}
			}
			if got := returned.Load(); got != tc.wantReturned {
				t.Errorf("%d blocking branches returned, want %d", got, tc.wantReturned)
			}
		})
	}
}

func TestMulticastAggregateTimeout(t *testing.T) {
	for _, parallel := range []bool{true, false} {
		name := "sequential"
		if parallel {
			name = "parallel"
		}
		t.Run(name, func(t *testing.T) {
			var returned atomic.Int32
			branches := []engine.Processor{setBody("fast"), blockUntilCancelled(&returned), setBody("also fast")}
			m, err := pattern.NewMulticastAggregate(engine.NewContext("t"), pattern.MulticastOptions{Parallel: parallel},
				branches, pattern.AggregateOptions{Strategy: "collect", Size: 3, Timeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ex := exchange.NewWithBody(exchange.InOut, "in")
			start := time.Now()
			if err := m.Process(context.Background(), ex); err != nil {
				t.Fatal(err)
			}
			// Generous bound: it must not wait for the blocked branch (which never ends
			// on its own), not be fast.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("aggregate took %s; the completion timeout did not end it", d)
			}
			want := []any{"fast", "also fast"}
			if parallel {
				if !reflect.DeepEqual(ex.In().Body(), want) {
					t.Errorf("body = %#v, want %#v", ex.In().Body(), want)
				}
				if got := ex.In().Header(exchange.HeaderAggregateMissing); !reflect.DeepEqual(got, []any{1}) {
					t.Errorf("HelixAggregateMissing = %#v, want [1]", got)
				}
			} else {
				// Sequentially, branch 2 never started: branch 1 blocked until the timeout.
				if !reflect.DeepEqual(ex.In().Body(), []any{"fast"}) {
					t.Errorf("body = %#v, want [fast]", ex.In().Body())
				}
				if got := ex.In().Header(exchange.HeaderAggregateMissing); !reflect.DeepEqual(got, []any{1, 2}) {
					t.Errorf("HelixAggregateMissing = %#v, want [1 2]", got)
				}
			}
			// The abandoned branch was cancelled at completion; Stop waits for it.
			stopMulticast(t, m)
			if returned.Load() != 1 {
				t.Errorf("the abandoned branch did not return after completion + Stop")
			}
		})
	}
}

func TestMulticastAggregateSize(t *testing.T) {
	var returned atomic.Int32
	branches := []engine.Processor{blockUntilCancelled(&returned), setBody("b"), setBody("c")}
	m, err := pattern.NewMulticastAggregate(engine.NewContext("t"), pattern.MulticastOptions{Parallel: true},
		branches, pattern.AggregateOptions{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	ex := exchange.NewWithBody(exchange.InOut, "in")
	if err := m.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ex.In().Body(), []any{"b", "c"}) {
		t.Errorf("body = %#v, want [b c]", ex.In().Body())
	}
	if got := ex.In().Header(exchange.HeaderAggregateMissing); !reflect.DeepEqual(got, []any{0}) {
		t.Errorf("HelixAggregateMissing = %#v, want [0]", got)
	}
	stopMulticast(t, m)
	if returned.Load() != 1 {
		t.Error("the branch left out by size completion was not cancelled")
	}
}

func TestMulticastCancelledExchange(t *testing.T) {
	var returned atomic.Int32
	m := pattern.NewMulticast(engine.NewContext("t"), pattern.MulticastOptions{Parallel: true},
		[]engine.Processor{blockUntilCancelled(&returned), blockUntilCancelled(&returned)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Process(ctx, exchange.NewWithBody(exchange.InOut, "in")) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the exchange did not end the multicast")
	}
	stopMulticast(t, m)
	if returned.Load() != 2 {
		t.Errorf("%d of 2 branches returned", returned.Load())
	}
}

func TestMulticastAfterStop(t *testing.T) {
	m := pattern.NewMulticast(engine.NewContext("t"), pattern.MulticastOptions{}, []engine.Processor{setBody("a")})
	stopMulticast(t, m)
	if err := m.Process(context.Background(), exchange.NewWithBody(exchange.InOut, "in")); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("err = %v, want a stopped error", err)
	}
}

func TestAggregateOptionsValidation(t *testing.T) {
	three := []engine.Processor{setBody(1), setBody(2), setBody(3)}
	cases := []struct {
		agg     pattern.AggregateOptions
		wantErr string
	}{
		{pattern.AggregateOptions{Strategy: "collect", Size: 3, Timeout: time.Second}, ""},
		{pattern.AggregateOptions{Strategy: "COLLECT"}, ""},
		{pattern.AggregateOptions{Strategy: "latest"}, `unknown strategy "latest"`},
		{pattern.AggregateOptions{Size: 4}, "more than the 3 multicast branches"},
		{pattern.AggregateOptions{Size: -1}, "size must be positive"},
		{pattern.AggregateOptions{Timeout: -time.Second}, "timeout must not be negative"},
	}
	for _, tc := range cases {
		_, err := pattern.NewMulticastAggregate(engine.NewContext("t"), pattern.MulticastOptions{}, three, tc.agg)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.agg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%+v: err = %v, want %q", tc.agg, err, tc.wantErr)
		}
	}
}

func TestMulticastInsideWorkflowIsStoppedByEngine(t *testing.T) {
	// The engine finds the multicast (a service) in the pipeline and Stop waits for its
	// abandoned branches; goleak in TestMain proves nothing is left.
	var returned atomic.Int32
	m, err := pattern.NewMulticastAggregate(nil, pattern.MulticastOptions{Parallel: true},
		[]engine.Processor{setBody("a"), blockUntilCancelled(&returned)}, pattern.AggregateOptions{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hc := engine.NewContext("t")
	if err := hc.AddWorkflow(&engine.Workflow{ID: "wf", Processors: []engine.Processor{m}}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ex := exchange.NewWithBody(exchange.InOut, "in")
	if err := hc.Run(context.Background(), "wf", ex); err != nil {
		t.Fatal(err)
	}
	stop(t, hc, 10*time.Second)
	if returned.Load() != 1 {
		t.Error("the abandoned branch did not end by Stop")
	}
	if err := hc.Run(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "in")); err == nil {
		t.Error("a stopped multicast must refuse new exchanges")
	}
}
