package step_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// fakeClient answers roots and records the question ids it was asked.
type fakeClient struct {
	ids   []string
	roots []ask.Root
	err   error
}

func (f *fakeClient) Elicit(_ context.Context, q *ask.Elicitation) (*ask.ElicitAnswer, error) {
	f.ids = append(f.ids, q.ID)
	return nil, f.err
}
func (f *fakeClient) Sample(_ context.Context, q *ask.Sampling) (*ask.SampleAnswer, error) {
	f.ids = append(f.ids, q.ID)
	return nil, f.err
}
func (f *fakeClient) Roots(_ context.Context, q *ask.RootsQuestion) ([]ask.Root, error) {
	f.ids = append(f.ids, q.ID)
	return f.roots, f.err
}

func buildSteps(t *testing.T, src string) []engine.Processor {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := config.NewDecoder("ask.yaml")
	bc := step.NewBuildContext(engine.NewContext("ask"))
	ps := step.BuildSteps(bc, d.Steps(doc.Content[0], "steps"))
	if err := errors.Join(d.Err(), bc.Errors().Err()); err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestRootsStep(t *testing.T) {
	t.Parallel()
	ps := buildSteps(t, `
- roots: {}
- roots: {id: dirs, into: dirs}
`)
	c := &fakeClient{roots: []ask.Root{{URI: "file:///a", Name: "a"}, {URI: "file:///b"}}}
	ctx := ask.WithClient(context.Background(), c)
	ex := exchange.New(exchange.InOut)
	for _, p := range ps {
		if err := p.Process(ctx, ex); err != nil {
			t.Fatal(err)
		}
	}
	want := []any{map[string]any{"uri": "file:///a", "name": "a"}, map[string]any{"uri": "file:///b"}}
	if !reflect.DeepEqual(ex.In().Body(), want) || !reflect.DeepEqual(ex.Variable("dirs"), want) {
		t.Errorf("body %v, variable %v", ex.In().Body(), ex.Variable("dirs"))
	}
	if len(c.ids) != 2 || !strings.HasPrefix(c.ids[0], "roots-") || c.ids[1] != "dirs" {
		t.Errorf("ids %q", c.ids)
	}
	// Without a client, and with the client's error wrapped (an input request is
	// an interrupt and stays one).
	if err := ps[0].Process(context.Background(), ex); !errors.Is(err, ask.ErrNoClient) {
		t.Errorf("no client: %v", err)
	}
	c.err = ask.ErrInputRequired
	if err := ps[0].Process(ctx, ex); !errors.Is(err, ask.ErrInputRequired) || !engine.IsInterrupt(err) {
		t.Errorf("pending: %v", err)
	}
}

// Derived question ids are stable (the same step, the same id) and differ between
// steps; an id: that is not a plain name is an error at its position.
func TestQuestionIDs(t *testing.T) {
	t.Parallel()
	src := `
- elicit: {message: a}
- elicit: {message: b}
- sample: {prompt: c}
`
	ids := func() []string {
		c := &fakeClient{err: errors.New("stop")}
		ctx := ask.WithClient(context.Background(), c)
		for _, p := range buildSteps(t, src) {
			_ = p.Process(ctx, exchange.New(exchange.InOut))
		}
		return c.ids
	}
	first, again := ids(), ids()
	if !reflect.DeepEqual(first, again) || len(first) != 3 || first[0] == first[1] ||
		!strings.HasPrefix(first[0], "elicit-") || !strings.HasPrefix(first[2], "sample-") {
		t.Errorf("ids %q then %q", first, again)
	}
	for _, bad := range []string{`"has space"`, `""`, strings.Repeat("x", 65)} {
		if got := buildErrors(t, "- elicit: {message: hi, id: "+bad+"}"); !strings.Contains(got, "ask.yaml:1:29: steps[0].id: id") {
			t.Errorf("id %s: %q", bad, got)
		}
	}
}
