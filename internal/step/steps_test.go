package step_test

import (
	"bytes"
	"context"
	"errors"
	helixlog "github.com/arvenza/helix/internal/component/log"
	"log/slog"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// build loads one workflow's steps from YAML and builds them on a fresh context.
func build(t *testing.T, steps string) (*engine.Context, []engine.Processor, config.Errors) {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte("workflows:\n  - id: w\n    trigger: direct://w\n    steps:\n"+steps))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	hc := engine.NewContext("test")
	hc.AddComponent("log", helixlog.New(hc.Logger))
	bc := step.NewBuildContext(hc)
	procs := step.BuildSteps(bc, cfg.Workflows[0].Steps)
	return hc, procs, bc.Errors()
}

func run(t *testing.T, steps string, body any, headers map[string]any) (*exchange.Exchange, error) {
	t.Helper()
	hc, procs, errs := build(t, steps)
	if len(errs) > 0 {
		t.Fatalf("build: %v", errs)
	}
	ex := exchange.NewWithBody(exchange.InOut, body)
	for k, v := range headers {
		ex.In().SetHeader(k, v)
	}
	err := engine.BuildPipeline(procs, nil, nil).Process(context.Background(), ex)
	_ = hc
	return ex, err
}

func TestStepSemantics(t *testing.T) {
	t.Setenv("HELIX_STEP_TEST", "env-value")
	for _, tc := range []struct {
		name, steps string
		body        any
		headers     map[string]any
		want        string // exchange.Stringify of the final body
		wantHeader  [2]string
	}{
		{"transform value", "      - transform: {starlang: 'payload[\"a\"] + 1'}\n", map[string]any{"a": 1}, nil, "2", [2]string{}},
		{"transform None keeps body", "      - transform:\n          starlang: |\n            payload[\"a\"] = 5\n", map[string]any{"a": 1}, nil, `{"a":1}`, [2]string{}},
		{"process None applies mutation", "      - process:\n          starlang: |\n            payload[\"a\"] = 5\n", map[string]any{"a": 1}, nil, `{"a":5}`, [2]string{}},
		{"write wins", "      - transform:\n          starlang: |\n            write({\"w\": 1}, \"application/json\")\n            \"ignored\"\n", nil, nil, `{"w":1}`, [2]string{}},
		{"set-body constant placeholders", "      - set-body: {constant: \"hi ${body.name} ${header.X} ${env:HELIX_STEP_TEST}\"}\n", map[string]any{"name": "Ada"}, map[string]any{"X": "x"}, "hi Ada x env-value", [2]string{}},
		{"set-body mapping constant", "      - set-body: {constant: {a: [1, two]}}\n", "old", nil, `{"a":[1,"two"]}`, [2]string{}},
		{"set-body shorthand", "      - set-body: plain\n", "old", nil, "plain", [2]string{}},
		{"set-body script", "      - set-body: {starlang: '{\"query\": payload, \"limit\": 5}'}\n", "q", nil, `{"limit":5,"query":"q"}`, [2]string{}},
		{"set-header script", "      - set-header: {name: HelixMcpToolName, starlang: '\"analyze-\" ++ headers.get(\"dataType\", \"generic\")'}\n", "b", map[string]any{"dataType": "csv"}, "b", [2]string{"HelixMcpToolName", "analyze-csv"}},
		{"set-header constant", "      - set-header: {name: Authorization, constant: \"Bearer ${env:HELIX_STEP_TEST}\"}\n", "b", nil, "b", [2]string{"Authorization", "Bearer env-value"}},
		{"target direct with parameters", "      - target: {uri: \"log://x\", parameters: {level: debug}}\n", "b", nil, "b", [2]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := run(t, tc.steps, tc.body, tc.headers)
			if err != nil {
				t.Fatal(err)
			}
			if got := exchange.Stringify(ex.In().Body()); got != tc.want {
				t.Errorf("body %s, want %s", got, tc.want)
			}
			if tc.wantHeader[0] != "" {
				if got := ex.In().HeaderString(tc.wantHeader[0]); got != tc.wantHeader[1] {
					t.Errorf("header %s = %q, want %q", tc.wantHeader[0], got, tc.wantHeader[1])
				}
			}
		})
	}
}

func TestFailNamesTheStep(t *testing.T) {
	_, err := run(t, "      - process:\n          starlang: |\n            fail(\"Value must be non-negative\")\n", map[string]any{}, nil)
	var se *engine.StepError
	if !errors.As(err, &se) || se.Step != "helix.yaml:5:9 process" || !strings.Contains(err.Error(), "Value must be non-negative") {
		t.Fatalf("error %v (step %v)", err, se)
	}
}

func TestLogStep(t *testing.T) {
	hc, procs, errs := build(t, "      - log: {message: \"got ${body.name}\", level: warn}\n")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var buf bytes.Buffer
	hc.SetLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	ex := exchange.NewWithBody(exchange.InOnly, map[string]any{"name": "Ada"})
	if err := procs[0].Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, `msg="got Ada"`) {
		t.Errorf("log output %q", out)
	}
}

func TestScriptErrorPositions(t *testing.T) {
	_, _, errs := build(t, "      - transform:\n          starlang: |\n            x = 1\n            y = x + * 2\n      - set-body: {starlang: 'payload['}\n      - transform: {starlang: \"\"}\n      - transform: {starlang: x, extra: 1}\n")
	want := []string{
		"helix.yaml:8:21: workflows[0].steps[0].starlang: starlang:",
		"helix.yaml:9:38: workflows[0].steps[1].starlang: starlang: unclosed '['",
		"helix.yaml:10:31: workflows[0].steps[2].starlang: empty Starlang script",
		"helix.yaml:11:31: workflows[0].steps[3].starlang: starlang: undefined: x is not a Starlang builtin",
		"helix.yaml:11:34: workflows[0].steps[3]: unknown key \"extra\" in a transform step",
	}
	got := strings.Split(errs.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d errors:\n%s", len(got), errs)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}
