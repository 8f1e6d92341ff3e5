package engine_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

type recordResume struct {
	steps  []string
	start  int
	before []int
}

func (r *recordResume) Start(steps []string, ex *exchange.Exchange) int {
	r.steps = steps
	ex.In().SetBody("restored")
	return r.start
}
func (r *recordResume) Before(i int, _ *exchange.Exchange) { r.before = append(r.before, i) }

// A Resume starts the workflow's own pipeline at a later step and sees each of its
// top-level steps; a nested pipeline (a composite step's) does not see it.
func TestResumeStartsAtAStep(t *testing.T) {
	t.Parallel()
	var ran []string
	mark := func(name string) engine.Processor {
		return engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ran = append(ran, name+"="+ex.In().Body().(string))
			return nil
		})
	}
	nested := engine.BuildPipeline([]engine.Processor{mark("n0"), mark("n1")}, nil, nil)
	p := engine.BuildPipeline([]engine.Processor{mark("s0"), named{mark("s1"), "second"}, nested, mark("s3")}, nil, nil)

	r := &recordResume{start: 1}
	if err := p.Process(engine.WithResume(context.Background(), r), exchange.NewWithBody(exchange.InOut, "fresh")); err != nil {
		t.Fatal(err)
	}
	if got := []any{ran, r.before}; len(ran) != 4 || ran[0] != "s1=restored" || ran[1] != "n0=restored" || len(r.before) != 3 || r.before[0] != 1 || r.before[2] != 3 {
		t.Fatalf("ran %v, before %v", got[0], got[1])
	}
	if len(r.steps) != 4 || r.steps[1] != "second" {
		t.Errorf("step names %q", r.steps)
	}
	// An index that is no step starts at the first.
	ran, r = nil, &recordResume{start: 9}
	_ = p.Process(engine.WithResume(context.Background(), r), exchange.NewWithBody(exchange.InOut, "fresh"))
	if len(ran) != 5 || ran[0] != "s0=restored" {
		t.Fatalf("ran %v", ran)
	}
}

type named struct {
	engine.Processor
	name string
}

func (n named) Name() string { return n.name }
