package step_test

import (
	"context"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// buildErrors builds a YAML step list and returns its errors as one string.
func buildErrors(t *testing.T, src string) string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := config.NewDecoder("ask.yaml")
	bc := step.NewBuildContext(engine.NewContext("ask"))
	step.BuildSteps(bc, d.Steps(doc.Content[0], "steps"))
	var b strings.Builder
	for _, e := range append(d.Errors(), bc.Errors()...) {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

func TestElicitAndSampleBuildErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"- elicit: {message: hi, schema: {properties: {a: {type: object}}}}", "ask.yaml:1:50: steps[0].schema.properties.a"},
		{"- elicit: {message: hi, schema: {properties: {a: {type: object}}}}", "type object is not allowed"},
		{"- elicit: {message: hi, schema: {type: array}}", "type object, not array"},
		{"- elicit: {message: hi, schema: {properties: {a: {type: string, format: phone}}}}", "format phone is not allowed"},
		{"- elicit: {message: hi, schema: {properties: {s: {type: string, enum: [x, y], default: z}}}}", "not one of the enum values"},
		{"- elicit: {message: hi, schema: {properties: {n: {type: integer, default: many}}}}", "is not a integer"},
		{"- elicit: {message: hi, schema: {properties: {s: {type: string, enum: [x], enumNames: [A, B]}}}}", "as long as enum"},
		{"- elicit: {message: hi, schema: {properties: {m: {type: array}}}}", "multi-select"},
		{"- elicit: {message: hi, schema: {properties: {a: {type: string}}, required: [b]}}", "required field b is not among the properties"},
		{"- elicit: {message: hi, on_decline: ignore}", "on_decline"},
		{"- elicit: {schema: {}}", "message"},
		{"- sample: {prompt: hi, messages: [{text: yo}]}", "not both"},
		{"- sample: {prompt: hi, temperature: 3}", "temperature"},
		{"- sample: {prompt: hi, model_preferences: {cost_priority: 2}}", "cost_priority"},
	} {
		got := buildErrors(t, c.src)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s\nerrors:\n%s\nwant %q", c.src, got, c.want)
		}
	}
	for _, ok := range []string{
		`- elicit: "Sure?"`,
		"- elicit: {message: hi, schema: {properties: {s: {oneOf: [{const: a, title: A}]}, m: {type: array, items: {anyOf: [{const: a, title: A}]}}}}}",
		`- sample: "Summarize ${body}"`,
		"- sample: {messages: [{role: user, text: hi}, {role: assistant, text: yo}, {text: more}]}",
	} {
		if got := buildErrors(t, ok); got != "" {
			t.Errorf("%s: unexpected errors:\n%s", ok, got)
		}
	}
}

func TestReleaseStreamBuild(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"- release-stream: {retry: soon}", "ask.yaml:1:27: steps[0].retry"},
		{"- release-stream: {retry: -1s}", "ask.yaml:1:27: steps[0].retry"},
		{"- release-stream: {retyr: 1s}", `unknown key "retyr"`},
	} {
		if got := buildErrors(t, c.src); !strings.Contains(got, c.want) {
			t.Errorf("%s\nerrors:\n%s\nwant %q", c.src, got, c.want)
		}
	}
	for _, ok := range []string{"- release-stream: {}", "- release-stream: 2s", "- release-stream: {retry: 0}"} {
		if got := buildErrors(t, ok); got != "" {
			t.Errorf("%s: unexpected errors:\n%s", ok, got)
		}
	}
	// Outside an MCP tool call the step lets the exchange pass unchanged.
	bc := step.NewBuildContext(engine.NewContext("ask"))
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("- release-stream: 1s"), &doc); err != nil {
		t.Fatal(err)
	}
	d := config.NewDecoder("ask.yaml")
	ps := step.BuildSteps(bc, d.Steps(doc.Content[0], "steps"))
	ex := exchange.NewWithBody(exchange.InOut, "body")
	if err := ps[0].Process(context.Background(), ex); err != nil || ex.In().Body() != "body" {
		t.Errorf("outside a tool call: %v, body %v", err, ex.In().Body())
	}
}
