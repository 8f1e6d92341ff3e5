package stepstats

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestCountsPerWorkflowAndStep(t *testing.T) {
	t.Parallel()
	s := New([]Def{{Kind: "workflow", ID: "a", Steps: 2}, {Kind: "tool", ID: "a", Steps: 1}})
	boom := errors.New("boom")
	for i := 0; i < 3; i++ {
		ctx, end := s.StartExchange(context.Background(), "workflow", "a", "", nil)
		_, e0 := s.StartStep(ctx, "log", 0, nil)
		e0(nil)
		_, e1 := s.StartStep(ctx, "target", 1, nil)
		if i == 2 {
			e1(boom)
			end(boom)
		} else {
			e1(nil)
			end(nil)
		}
	}
	got, ok := s.Get("workflow", "a")
	if !ok {
		t.Fatal("workflow a not counted")
	}
	if got.Exchange.Count != 3 || got.Exchange.Errors != 1 {
		t.Fatalf("exchange = %+v, want 3 runs, 1 error", got.Exchange)
	}
	if got.Steps[0].Count != 3 || got.Steps[0].Errors != 0 || got.Steps[1].Count != 3 || got.Steps[1].Errors != 1 {
		t.Fatalf("steps = %+v", got.Steps)
	}
	if got.Exchange.Last.IsZero() || got.Exchange.P99 == 0 {
		t.Fatalf("no latency recorded: %+v", got.Exchange)
	}
	// The tool of the same id is another workflow.
	if tool, _ := s.Get("tool", "a"); tool.Exchange.Count != 0 {
		t.Fatalf("tool a counted %d exchanges of workflow a", tool.Exchange.Count)
	}
	if _, ok := s.Get("workflow", "nope"); ok {
		t.Fatal("an undeclared workflow has counts")
	}
}

// A direct:// call runs the callee's exchange inside the caller's context:
// the callee's steps count for the callee, and an undeclared callee's steps
// for nobody.
func TestNestedExchangesCountForTheirOwnWorkflow(t *testing.T) {
	t.Parallel()
	s := New([]Def{{Kind: "workflow", ID: "outer", Steps: 2}, {Kind: "workflow", ID: "inner", Steps: 1}})
	ctx, end := s.StartExchange(context.Background(), "workflow", "outer", "", nil)
	sctx, e1 := s.StartStep(ctx, "target", 1, nil)
	ictx, iend := s.StartExchange(sctx, "workflow", "inner", "", nil)
	_, ie := s.StartStep(ictx, "transform", 0, nil)
	ie(nil)
	iend(nil)
	uctx, uend := s.StartExchange(sctx, "workflow", "undeclared", "", nil)
	_, ue := s.StartStep(uctx, "x", 0, nil)
	ue(errors.New("x"))
	uend(nil)
	e1(nil)
	end(nil)
	outer, _ := s.Get("workflow", "outer")
	inner, _ := s.Get("workflow", "inner")
	if outer.Steps[0].Count != 0 || outer.Steps[1].Count != 1 || outer.Steps[1].Errors != 0 {
		t.Fatalf("outer steps = %+v", outer.Steps)
	}
	if inner.Steps[0].Count != 1 || inner.Exchange.Count != 1 {
		t.Fatalf("inner = %+v", inner)
	}
}

func TestStepIndexOutOfRangeIsIgnored(t *testing.T) {
	t.Parallel()
	s := New([]Def{{Kind: "workflow", ID: "a", Steps: 1}})
	ctx, end := s.StartExchange(context.Background(), "workflow", "a", "", nil)
	for _, i := range []int{-1, 1, 1000} {
		_, e := s.StartStep(ctx, "x", i, nil)
		e(nil)
	}
	_, e := s.StartStep(context.Background(), "x", 0, nil) // no exchange
	e(nil)
	end(nil)
	if got, _ := s.Get("workflow", "a"); got.Steps[0].Count != 0 {
		t.Fatalf("steps = %+v", got.Steps)
	}
}

func TestQuantiles(t *testing.T) {
	t.Parallel()
	if len(bounds)+1 > len(Counter{}.buckets) {
		t.Fatalf("%d bounds do not fit the %d buckets", len(bounds), len(Counter{}.buckets))
	}
	var c Counter
	for i := 0; i < 98; i++ {
		c.Observe(3*time.Millisecond, false)
	}
	c.Observe(900*time.Millisecond, false)
	c.Observe(2*time.Hour, true)
	s := c.Summary()
	if s.Count != 100 || s.Errors != 1 {
		t.Fatalf("summary = %+v", s)
	}
	// 3ms is in the bucket up to 4.096ms; the 99th of 100 is the 900ms run (≤ 1.048576s).
	if s.P50 != 4096*time.Microsecond {
		t.Fatalf("p50 = %v, want 4.096ms", s.P50)
	}
	if s.P99 != 1048576*time.Microsecond {
		t.Fatalf("p99 = %v, want 1.048576s", s.P99)
	}
	for _, d := range []time.Duration{0, time.Microsecond, 2 * time.Microsecond, 1024 * time.Microsecond, 1025 * time.Microsecond, 10 * time.Hour} {
		b := bucket(d)
		if b < len(bounds) && d > bounds[b] {
			t.Errorf("%v in bucket %d (≤ %v)", d, b, bounds[b])
		}
		if b > 0 && b <= len(bounds) && d <= bounds[b-1] {
			t.Errorf("%v in bucket %d, fits bucket %d", d, b, b-1)
		}
	}
}

func TestConcurrentExchanges(t *testing.T) {
	t.Parallel()
	s := New([]Def{{Kind: "workflow", ID: "a", Steps: 3}})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				ctx, end := s.StartExchange(context.Background(), "workflow", "a", "", nil)
				for st := 0; st < 3; st++ {
					_, e := s.StartStep(ctx, "x", st, nil)
					e(nil)
				}
				end(nil)
				_, _ = s.Get("workflow", "a")
			}
		}()
	}
	wg.Wait()
	got, _ := s.Get("workflow", "a")
	if got.Exchange.Count != 4000 || got.Steps[2].Count != 4000 {
		t.Fatalf("counts = %+v", got)
	}
}

// A step costs no allocation: the engine calls StartStep for every top-level
// step of every exchange. (Not parallel: AllocsPerRun counts the process.)
func TestStepDoesNotAllocate(t *testing.T) {
	s := New([]Def{{Kind: "workflow", ID: "a", Steps: 1}})
	ctx, end := s.StartExchange(context.Background(), "workflow", "a", "", nil)
	defer end(nil)
	allocs := testing.AllocsPerRun(1000, func() {
		_, e := s.StartStep(ctx, "x", 0, nil)
		e(nil)
	})
	if allocs != 0 {
		t.Fatalf("a step allocates %v times", allocs)
	}
}

func BenchmarkExchangeWithThreeSteps(b *testing.B) {
	s := New([]Def{{Kind: "workflow", ID: "a", Steps: 3}})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ctx, end := s.StartExchange(context.Background(), "workflow", "a", "", nil)
			for st := 0; st < 3; st++ {
				_, e := s.StartStep(ctx, "x", st, nil)
				e(nil)
			}
			end(nil)
		}
	})
}

// Nested steps count by their position, each apart, in the workflow of the
// exchange's run; a position not declared, or outside a counted run, is not
// counted and adds no counter.
func TestNestedStepsCountByPosition(t *testing.T) {
	t.Parallel()
	s := New([]Def{{Kind: "workflow", ID: "a", Steps: 1, Nested: []string{"a.yaml:5:13", "a.yaml:7:13", "a.yaml:5:13"}}})
	ctx, end := s.StartExchange(context.Background(), "workflow", "a", "", nil)
	for i := 0; i < 3; i++ {
		_, e := s.StartNestedStep(ctx, "a.yaml:5:13 log", nil)
		if i == 1 {
			e(errors.New("boom"))
		} else {
			e(nil)
		}
	}
	_, e := s.StartNestedStep(ctx, "a.yaml:99:1 log", nil) // not declared
	e(nil)
	end(nil)
	_, e = s.StartNestedStep(context.Background(), "a.yaml:7:13 log", nil) // no run
	e(nil)
	got, _ := s.Get("workflow", "a")
	if len(got.Nested) != 2 {
		t.Fatalf("nested = %+v, want the two declared positions", got.Nested)
	}
	if n := got.Nested["a.yaml:5:13"]; n.Count != 3 || n.Errors != 1 || n.P99 == 0 {
		t.Errorf("a.yaml:5:13 = %+v, want 3 runs, 1 error", n)
	}
	if n := got.Nested["a.yaml:7:13"]; n.Count != 0 {
		t.Errorf("a.yaml:7:13 = %+v, want no runs", n)
	}
	if got.Steps[0].Count != 0 {
		t.Errorf("a nested step counted as top-level step: %+v", got.Steps)
	}
}

func TestPosition(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"helix.yaml:14:9 log":             "helix.yaml:14:9",
		"my dir/helix.yaml:14:9 set-body": "my dir/helix.yaml:14:9",
		"nameless":                        "nameless",
		"":                                "",
	} {
		if got := Position(name); got != want {
			t.Errorf("Position(%q) = %q, want %q", name, got, want)
		}
	}
}

// Nested steps of one exchange run at the same time (a parallel multicast or
// split): every one is counted, under -race.
func TestConcurrentNestedSteps(t *testing.T) {
	t.Parallel()
	s := New([]Def{{Kind: "workflow", ID: "a", Nested: []string{"a.yaml:5:13"}}})
	ctx, end := s.StartExchange(context.Background(), "workflow", "a", "", nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				_, e := s.StartNestedStep(ctx, "a.yaml:5:13 log", nil)
				e(nil)
			}
		}()
	}
	wg.Wait()
	end(nil)
	if got, _ := s.Get("workflow", "a"); got.Nested["a.yaml:5:13"].Count != 800 {
		t.Fatalf("counted %d nested runs, want 800", got.Nested["a.yaml:5:13"].Count)
	}
}

// A nested step allocates nothing in the steady state: its timer comes from a
// pool. (Not parallel: AllocsPerRun counts the process.)
func TestNestedStepDoesNotAllocate(t *testing.T) {
	s := New([]Def{{Kind: "workflow", ID: "a", Nested: []string{"a.yaml:5:13"}}})
	ctx, end := s.StartExchange(context.Background(), "workflow", "a", "", nil)
	defer end(nil)
	allocs := testing.AllocsPerRun(1000, func() {
		_, e := s.StartNestedStep(ctx, "a.yaml:5:13 log", nil)
		e(nil)
	})
	if allocs > 0 {
		t.Fatalf("a nested step allocates %.1f times", allocs)
	}
}
