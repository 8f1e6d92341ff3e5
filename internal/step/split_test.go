package step_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// splitGoWorkflows are the Go workflows testdata/patterns/split.yaml calls.
type splitGoWorkflows struct {
	rec             testtools.Recorder
	active, peak    atomic.Int32
	blocked, unblkd atomic.Int32
	gates           sync.Map // index → chan struct{} closed when that element passed the gate
}

func (g *splitGoWorkflows) processors() map[string]engine.Processor {
	gate := func(i int) chan struct{} {
		ch, _ := g.gates.LoadOrStore(i, make(chan struct{}))
		return ch.(chan struct{})
	}
	return map[string]engine.Processor{
		"direct://record": &g.rec,
		// Element i waits for element i+1 (the last one passes at once).
		"direct://gate": engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			i := ex.In().Header(pattern.HeaderSplitIndex).(int)
			if i+1 < ex.In().Header(pattern.HeaderSplitSize).(int) {
				select {
				case <-gate(i + 1):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			close(gate(i))
			return nil
		}),
		// Counts the elements running at once; holds each until the bound of 3 was
		// reached once, so the test sees both that 3 run together and never more.
		"direct://count": engine.ProcessorFunc(func(ctx context.Context, _ *exchange.Exchange) error {
			n := g.active.Add(1)
			defer g.active.Add(-1)
			for {
				p := g.peak.Load()
				if n <= p || g.peak.CompareAndSwap(p, n) {
					break
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for g.peak.Load() < 3 {
				if time.Now().After(deadline) || ctx.Err() != nil {
					return errors.New("three elements never ran at once")
				}
				time.Sleep(time.Millisecond)
			}
			// A moment for a split that ignores its bound to start more elements.
			time.Sleep(2 * time.Millisecond)
			return nil
		}),
		"direct://block": engine.ProcessorFunc(func(ctx context.Context, _ *exchange.Exchange) error {
			g.blocked.Add(1)
			<-ctx.Done()
			g.unblkd.Add(1)
			return ctx.Err()
		}),
	}
}

func splitApp(t *testing.T) (*engine.Context, *splitGoWorkflows) {
	t.Helper()
	g := &splitGoWorkflows{}
	hc, _ := patternApp(t, "split.yaml", g.processors())
	return hc, g
}

func TestSplitYAML(t *testing.T) {
	hc, g := splitApp(t)

	t.Run("list, collected in order", func(t *testing.T) {
		ex, err := call(t, hc, "split-list", []any{
			map[string]any{"id": "a", "qty": 2, "price": 5},
			map[string]any{"id": "b", "qty": 1, "price": 7},
		})
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "body", ex.In().Body(), []any{
			map[string]any{"id": "a", "total": 10, "index": 0, "of": 2},
			map[string]any{"id": "b", "total": 7, "index": 1, "of": 2},
		})
	})
	t.Run("parallel keeps input order", func(t *testing.T) {
		ex, err := call(t, hc, "split-parallel-order", []any{"w", "x", "y", "z"})
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "body", ex.In().Body(), []any{"reply 0", "reply 1", "reply 2", "reply 3"})
	})
	t.Run("max_concurrency is respected", func(t *testing.T) {
		ex, err := call(t, hc, "split-bounded", make([]any, 12))
		if err != nil {
			t.Fatal(err)
		}
		if p := g.peak.Load(); p != 3 {
			t.Errorf("peak concurrency = %d, want 3", p)
		}
		if n := len(ex.In().Body().([]any)); n != 12 {
			t.Errorf("%d results, want 12", n)
		}
	})
	t.Run("lines", func(t *testing.T) {
		ex, err := call(t, hc, "split-lines", "{\"name\": \"ada\"}\n{\"name\": \"bob\"}\n")
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "body", ex.In().Body(), []any{"ADA", "BOB"})
	})
	t.Run("chunks", func(t *testing.T) {
		ex, err := call(t, hc, "split-chunks", "abcdefghij")
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "body", ex.In().Body(), []any{4, 4, 2})
	})
	t.Run("expression and aggregate script", func(t *testing.T) {
		ex, err := call(t, hc, "split-expression", map[string]any{"order": map[string]any{"id": "o-1", "items": []any{
			map[string]any{"qty": 2, "price": 3}, map[string]any{"qty": 1, "price": 10}, map[string]any{"qty": 4, "price": 1},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "body", ex.In().Body(), map[string]any{"order": "o-1", "total": 20, "lines": 3})
		if ex.Variable("results") != nil {
			t.Error("the aggregate's results variable leaked into the exchange")
		}
	})
	t.Run("stop_on_error (default) stops at the failed element and names it", func(t *testing.T) {
		before := len(g.rec.All())
		ex, err := call(t, hc, "split-stop", []any{map[string]any{"sku": "a"}, map[string]any{"qty": 1}, map[string]any{"sku": "c"}})
		if err == nil || !strings.Contains(err.Error(), "split: split[1]: ") || !strings.Contains(err.Error(), "sku is required") {
			t.Fatalf("err = %v, want the failure of element 1", err)
		}
		if !strings.Contains(err.Error(), "split.yaml:77:9 split: split[1]: testdata/patterns/split.yaml:80:15 transform: sku is required") {
			t.Errorf("err = %v, want the split's position, the index and the failed nested step's position", err)
		}
		if n := len(g.rec.All()) - before; n != 2 {
			t.Errorf("%d elements reached the first nested step, want 2 (none after the failed one)", n)
		}
		if got := exchange.ClientMessage(err); got != "split[1]: sku is required" {
			t.Errorf("client message = %q, want the index and the script's message", got)
		}
		if ex.Exception() == nil {
			t.Error("the exchange must carry the exception")
		}
	})
	t.Run("stop_on_error false goes on and reports every failure", func(t *testing.T) {
		ex, err := call(t, hc, "split-continue", []any{map[string]any{"sku": "a"}, map[string]any{}, map[string]any{"sku": "c"}, map[string]any{"qty": 2}})
		if err != nil {
			t.Fatal(err)
		}
		body := ex.In().Body().(map[string]any)
		jsonEqual(t, "skus", body["skus"], []any{"a", "c"})
		jsonEqual(t, "failed", body["failed"], []any{1, 3})
		errs := body["errors"].([]any)
		if len(errs) != 2 || !strings.HasPrefix(errs[0].(string), "split[1]: ") || !strings.Contains(errs[1].(string), "sku is required") {
			t.Errorf("errors = %v", errs)
		}
	})
	t.Run("nested split", func(t *testing.T) {
		ex, err := call(t, hc, "split-nested", map[string]any{"batches": []any{[]any{1, 2}, []any{}, []any{3}}})
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "body", ex.In().Body(), []any{[]any{10, 20}, []any{}, []any{30}})
		_, err = call(t, hc, "split-nested", map[string]any{"batches": []any{[]any{1}, []any{2, -3}}})
		if err == nil || !strings.Contains(err.Error(), "split.yaml:108:9 split: split[1]: testdata/patterns/split.yaml:111:15 split: split[1]: testdata/patterns/split.yaml:114:21 transform: negative: -3") || !strings.Contains(err.Error(), "negative: -3") {
			t.Errorf("err = %v, want both indexes", err)
		}
	})
	t.Run("empty list", func(t *testing.T) {
		ex, err := call(t, hc, "split-list", []any{})
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "body", ex.In().Body(), []any{})
	})
	t.Run("a body that is not a list", func(t *testing.T) {
		_, err := call(t, hc, "split-list", "a,b,c")
		if err == nil || !strings.Contains(err.Error(), "the body is a string (5 bytes), not a list") || !strings.Contains(err.Error(), "lines: true") {
			t.Errorf("err = %v", err)
		}
		_, err = call(t, hc, "split-expression", map[string]any{"order": map[string]any{"id": "o", "items": "none"}})
		if err == nil || !strings.Contains(err.Error(), "the expression's value is a string (4 bytes), not a list") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("original body kept", func(t *testing.T) {
		before := len(g.rec.All())
		ex, err := call(t, hc, "split-original", []any{"p", "q"})
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, "body", ex.In().Body(), []any{"p", "q"})
		var got []any
		for _, r := range g.rec.All()[before:] {
			got = append(got, r.In().Body())
		}
		jsonEqual(t, "recorded", got, []any{"p", "q"})
		if ex.In().Header("Stub") != nil {
			t.Error("a header set by the elements leaked")
		}
	})
	t.Run("headers and variables do not leak", func(t *testing.T) {
		ex, err := call(t, hc, "split-isolated", []any{1, 2, 3})
		if err != nil {
			t.Fatal(err)
		}
		el := map[string]any{"sawMark": nil, "sawVar": false, "keep": "yes"}
		jsonEqual(t, "body", ex.In().Body(), map[string]any{"elements": []any{el, el, el}, "mark": nil, "var": false, "index": nil})
	})
	t.Run("too many elements", func(t *testing.T) {
		before := len(g.rec.All())
		_, err := call(t, hc, "split-limited", "1\n2\n3\n4\n")
		if !errors.Is(err, pattern.ErrTooManyElements) || !strings.Contains(err.Error(), "the body has 4 lines, more than the limit of 3 (max_elements)") {
			t.Errorf("err = %v", err)
		}
		if n := len(g.rec.All()) - before; n != 0 {
			t.Errorf("%d elements ran, want none", n)
		}
		if _, err := call(t, hc, "split-limited", "1\n2\n3\n"); err != nil {
			t.Errorf("at the limit: %v", err)
		}
	})
	t.Run("cancelling the exchange stops the split", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- hc.Run(ctx, "split-cancel", exchange.NewWithBody(exchange.InOut, make([]any, 10))) }()
		deadline := time.Now().Add(10 * time.Second)
		for g.blocked.Load() < 2 {
			if time.Now().After(deadline) {
				t.Fatal("the elements never started")
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want the cancellation", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the split did not return after cancellation")
		}
		for g.unblkd.Load() < 2 {
			if time.Now().After(deadline) {
				t.Fatal("the running elements were not cancelled")
			}
			time.Sleep(time.Millisecond)
		}
		if n := g.blocked.Load(); n != 2 {
			t.Errorf("%d elements started, want 2 (none after the cancellation)", n)
		}
	})
}

// Misconfigured split steps are reported at load time, with positions, all at once.
func TestSplitBuildErrors(t *testing.T) {
	const head = "workflows:\n  - id: w\n    trigger:\n      uri: direct://w\n    steps:\n"
	cases := []struct {
		name  string
		steps string
		want  []string
	}{
		{
			name:  "no steps",
			steps: "      - split: {parallel: true}\n",
			want:  []string{"t.yaml:6:16", `a split is missing required key "steps"`},
		},
		{
			name:  "two ways of splitting",
			steps: "      - split:\n          lines: true\n          starlang: payload\n          steps: []\n",
			want:  []string{"t.yaml:7:11", "a split takes one of starlang, lines and chunk_size, not lines and starlang"},
		},
		{
			name:  "misspelled key",
			steps: "      - split:\n          stop_on_eror: false\n          steps: []\n",
			want:  []string{"t.yaml:7:11", `unknown key "stop_on_eror" in a split`, `did you mean "stop_on_error"`},
		},
		{
			name:  "max_concurrency without parallel",
			steps: "      - split:\n          max_concurrency: 4\n          steps: []\n",
			want:  []string{"t.yaml:7:28", "max_concurrency only applies to a parallel split", "add parallel: true"},
		},
		{
			name:  "bad numbers",
			steps: "      - split:\n          parallel: true\n          max_concurrency: 0\n          max_elements: -1\n          chunk_size: lots\n          steps: []\n",
			want:  []string{"t.yaml:8:28", "max_concurrency must be at least 1, got 0", "t.yaml:9:25", "max_elements must be at least 1, got -1", "t.yaml:10:23", `"lots" is not a size`},
		},
		{
			name:  "unknown aggregate",
			steps: "      - split:\n          aggregate: colect\n          steps: []\n",
			want:  []string{"t.yaml:7:22", `unknown split aggregate "colect"`, "collect"},
		},
		{
			name:  "aggregate list",
			steps: "      - split:\n          aggregate: [collect]\n          steps: []\n",
			want:  []string{"t.yaml:7:22", "a split aggregate is a word or a mapping {starlang: …}"},
		},
		{
			name:  "aggregate script errors point into the script",
			steps: "      - split:\n          aggregate:\n            starlang: |\n              sum(resluts)\n          steps: []\n",
			want:  []string{"t.yaml:9:19", "undefined: resluts", "results"},
		},
		{
			name:  "split expression syntax error",
			steps: "      - split:\n          starlang: 'payload[\"items\"'\n          steps: []\n",
			want:  []string{"t.yaml:7:", "starlang:"},
		},
		{
			name:  "broken nested step is reported with the options' errors",
			steps: "      - split:\n          max_elements: 0\n          steps:\n            - tranform: {starlang: x}\n",
			want:  []string{"max_elements must be at least 1", `unknown step "tranform"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.LoadBytes("t.yaml", []byte(head+tc.steps))
			if err == nil {
				_, err = app.Build(cfg, app.Options{})
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// `results` is defined for the aggregate script only: a later step reading it is an
// error at load time.
func TestSplitResultsOnlyInAggregate(t *testing.T) {
	const src = "workflows:\n  - id: w\n    trigger:\n      uri: http-server://0.0.0.0:0/x\n    steps:\n" +
		"      - split:\n          aggregate: {starlang: 'len(results)'}\n          steps: []\n" +
		"      - transform: {starlang: 'results'}\n"
	cfg, err := config.LoadBytes("t.yaml", []byte(src))
	if err == nil {
		_, err = app.Build(cfg, app.Options{})
	}
	if err == nil || !strings.Contains(err.Error(), "t.yaml:9:32") || !strings.Contains(err.Error(), "undefined: results") {
		t.Fatalf("err = %v, want results undefined in the transform only", err)
	}
	if strings.Count(err.Error(), "undefined") != 1 {
		t.Errorf("err = %v, want one error (the aggregate script may read results)", err)
	}
}
