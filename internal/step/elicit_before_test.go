package step_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Only the leading top-level steps of a workflow may ask before the task.
func TestElicitBeforeTaskOnlyLeading(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{"- log: hi\n- elicit: {message: hi, before_task: true}", "ask.yaml:2:38: steps[1].before_task: only the leading top-level steps"},
		{"- elicit: {message: a}\n- elicit: {message: b, before_task: true}", "steps[1].before_task"},
		{"- multicast:\n    steps:\n      - elicit: {message: hi, before_task: true}", "ask.yaml:3:44: steps[0].steps[0].before_task"},
		{"- elicit: {message: hi, before_task: yes please}", "before_task"},
	} {
		if got := buildErrors(t, c.src); !strings.Contains(got, c.want) {
			t.Errorf("%s\nerrors:\n%s\nwant %q", c.src, got, c.want)
		}
	}
	ok := "- elicit: {message: a, id: a, before_task: true}\n- elicit: {message: b, id: b, before_task: true}\n- elicit: {message: c, id: c}\n- log: hi"
	if got := buildErrors(t, ok); got != "" {
		t.Errorf("%s: unexpected errors:\n%s", ok, got)
	}
}

// The questions asked before the task are those of the leading before_task
// elicit: steps, keyed and worded as they would park; started with their
// answers, the steps apply them and do not park.
func TestElicitBeforeTaskQuestionsAndAnswers(t *testing.T) {
	t.Parallel()
	src := `- elicit: {message: "Name for ${body.id}?", id: who, before_task: true, schema: {properties: {name: {type: string}}, required: [name]}}
- elicit: {message: "Sure?", id: sure, before_task: true}
- log: hi
- elicit: {message: "Later", id: later}`
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := config.NewDecoder("w.yaml")
	bc := step.NewBuildContext(engine.NewContext("before"))
	ps := step.BuildSteps(bc, d.Steps(doc.Content[0], "steps"))
	if errs := append(d.Errors(), bc.Errors()...); len(errs) > 0 {
		t.Fatal(errs)
	}
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"id": "o-1"})
	waits, err := durable.BeforeTaskWaits(&engine.Workflow{Processors: ps}, ex)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 2 || waits[0].Key != "who" || waits[0].Message != "Name for o-1?" || waits[0].Kind != durable.WaitElicit || waits[1].Key != "sure" {
		t.Fatalf("waits %+v", waits)
	}
	// The same question as the step parks on, but for its deadline.
	parked := parkOf(t, ps[0].Process(durable.WithDurable(context.Background(), "run-b"), ex))
	if parked.Key != waits[0].Key || parked.Message != waits[0].Message || string(parked.Schema) != string(waits[0].Schema) {
		t.Errorf("parks on %+v, asks %+v", parked, waits[0])
	}
	ctx := durable.WithResolutions(durable.WithDurable(context.Background(), "run-b"), map[string]durable.Resolution{
		"who": {Kind: durable.ResolvedAnswered, Key: "who", Data: json.RawMessage(`{"name":"Ada"}`)}})
	if err := ps[0].Process(ctx, ex); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "the answer", ex.In().Body(), map[string]any{"name": "Ada"})
	// A question with no answer among them parks as ever.
	if wt := parkOf(t, ps[1].Process(ctx, ex)); wt.Key != "sure" {
		t.Errorf("wait %+v", wt)
	}
	// Without before_task, no question is asked before the task.
	if waits, _ := durable.BeforeTaskWaits(&engine.Workflow{Processors: ps[2:]}, ex); len(waits) != 0 {
		t.Errorf("waits %+v", waits)
	}
}
