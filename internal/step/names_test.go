package step_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// buildAll builds every workflow of src like pkg/app does (trigger first, then the
// steps) and returns the build errors.
func buildAll(t *testing.T, src string) config.Errors {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(src))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	bc := step.NewBuildContext(engine.NewContext("test"))
	for _, w := range cfg.Workflows {
		bc.Workflow, bc.Trigger = w.ID, w.From
		step.BuildSteps(bc, w.Steps)
	}
	return bc.Errors()
}

// Spec Recipe 3 reads headers_list, which nothing defines: today that fails at every
// call; it must be an error at load, at the name's own line and column.
func TestUndefinedScriptNameIsALoadError(t *testing.T) {
	errs := buildAll(t, `workflows:
  - id: analyze-csv
    trigger:
      uri: direct://analyze-csv
    steps:
      - transform:
          starlang: |
            lines = payload.strip().split("\n")
            headers = lines[0].split(",")
            write({
              "fileName": headers_list,
              "columns": sizeOf(headers_list),
            }, "application/json")
`)
	if len(errs) != 1 {
		t.Fatalf("want one error (the first use of headers_list), got %v", errs)
	}
	e := errs[0]
	if e.Pos.String() != "helix.yaml:11:27" || !strings.Contains(e.Msg, "headers_list") || !strings.Contains(e.Msg, "enrich") {
		t.Errorf("error = %v, want helix.yaml:11:27 naming headers_list and enrich", e)
	}
}

func TestUndefinedScriptNameSuggestsAVariable(t *testing.T) {
	errs := buildAll(t, `workflows:
  - id: w
    trigger: http-server://0.0.0.0:1/x
    steps:
      - enrich:
          starlang: |
            accountId = payload["account"]
      - set-header:
          name: X
          starlang: 'acountId'
`)
	if len(errs) != 1 || errs[0].Pos.String() != "helix.yaml:10:22" || !strings.Contains(errs[0].Hint, `did you mean "accountId"?`) {
		t.Fatalf("errors = %v, want one at helix.yaml:10:22 suggesting accountId", errs)
	}
}

func TestEnrichVariablesCountOnlyAfterTheEnrich(t *testing.T) {
	ok := `workflows:
  - id: w
    trigger: http-server://0.0.0.0:1/x
    steps:
      - enrich:
          starlang: |
            accountId = payload["account"]
            def helper(x):
                return x
      - choice:
          when:
            - starlang: 'accountId == "a"'
              steps:
                - enrich: {starlang: 'tier = "gold"'}
                - transform: {starlang: 'helper(tier)'}
      - transform: {starlang: '{"id": accountId, "tier": tier}'}
`
	if errs := buildAll(t, ok); len(errs) != 0 {
		t.Fatalf("names set by earlier enrich steps: %v", errs)
	}
	before := `workflows:
  - id: w
    trigger: http-server://0.0.0.0:1/x
    steps:
      - transform: {starlang: 'accountId'}
      - enrich: {starlang: 'accountId = 1'}
  - id: v
    trigger: http-server://0.0.0.0:1/y
    steps:
      - transform: {starlang: 'accountId'}
`
	errs := buildAll(t, before)
	if len(errs) != 2 || errs[0].Pos.Line != 5 || errs[1].Pos.Line != 10 {
		t.Fatalf("a name read before its enrich, and in another workflow with its own trigger: %v", errs)
	}
}

// A workflow triggered by direct:// runs on its caller's exchange, with the
// variables the caller's enrich steps set.
func TestDirectWorkflowSeesCallerVariables(t *testing.T) {
	src := `workflows:
  - id: callee
    trigger: direct://callee
    steps:
      - transform: {starlang: 'accountId'}
  - id: caller
    trigger: http-server://0.0.0.0:1/x
    steps:
      - enrich: {starlang: 'accountId = 1'}
      - target: direct://callee
`
	if errs := buildAll(t, src); len(errs) != 0 {
		t.Fatalf("%v", errs)
	}
}

func TestStarlangOptionsReachScripts(t *testing.T) {
	cfg, err := config.LoadBytes("helix.yaml", []byte(`workflows:
  - id: w
    trigger: direct://w
    steps:
      - transform: {starlang: 'len("x" * payload["n"])'}
`))
	if err != nil {
		t.Fatal(err)
	}
	bc := step.NewBuildContext(engine.NewContext("test"))
	bc.Starlang = &starlang.Options{MaxMemory: 1 << 20}
	procs := step.BuildSteps(bc, cfg.Workflows[0].Steps)
	if errs := bc.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"n": 2 << 20})
	err = engine.BuildPipeline(procs, nil, nil).Process(context.Background(), ex)
	if !errors.Is(err, starlang.ErrMemoryLimit) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("err = %v, want the 1 MiB budget", err)
	}
}
