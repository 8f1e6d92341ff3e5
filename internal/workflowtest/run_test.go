package workflowtest

import (
	"context"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestRunGivesUpOnAWorkflowThatIgnoresCancellation: a step that never returns, even
// when its context ends, must not hang helix test; the case is reported as timed out
// shortly after its deadline.
func TestRunGivesUpOnAWorkflowThatIgnoresCancellation(t *testing.T) {
	hc := engine.NewContext("hang")
	release := make(chan struct{})
	defer close(release)
	if err := hc.AddWorkflow(&engine.Workflow{ID: "stuck", Processors: []engine.Processor{
		engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { <-release; return nil }),
	}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, timedOut := run(context.Background(), hc, "stuck", exchange.New(exchange.InOut), 50*time.Millisecond)
	if !timedOut {
		t.Error("a run past its deadline must be reported as timed out")
	}
	if took := time.Since(start); took > 50*time.Millisecond+abandonGrace+time.Second {
		t.Errorf("run took %v", took)
	}
}

// TestDifferencesSubset checks the comparison the expectations use.
func TestDifferencesSubset(t *testing.T) {
	got := plain(map[string]any{"a": 1, "b": []any{1, 2, 3}, "c": "x"}, true)
	tests := []struct {
		want   any
		subset bool
		diffs  []string
	}{
		{map[string]any{"a": 1.0, "b": []any{1, 2}}, true, nil},
		{map[string]any{"a": 1.0, "b": []any{1, 2}}, false, []string{"body.b: got 3 items, want 2", `body.c: got "x", not expected`}},
		{map[string]any{"a": "1"}, true, []string{`body.a: got 1, want "1"`}},
		{map[string]any{"d": nil}, true, []string{"body.d: missing, want null"}},
		{[]any{1}, true, []string{`body: got {"a":1,"b":[1,2,3],"c":"x"}, want a list [1]`}},
	}
	for _, tc := range tests {
		d := differences("body", got, plain(tc.want, true), tc.subset)
		if len(d) != len(tc.diffs) {
			t.Errorf("want %v subset=%v: got %q, want %q", tc.want, tc.subset, d, tc.diffs)
			continue
		}
		for i := range d {
			if d[i] != tc.diffs[i] {
				t.Errorf("got %q, want %q", d[i], tc.diffs[i])
			}
		}
	}
}
