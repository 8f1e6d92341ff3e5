package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// validateYAML runs what `helix validate` runs on src (file helix.yaml in a temp dir)
// and returns the errors and the warnings, each rendered with its position and
// relative to the directory.
func validateYAML(t *testing.T, src string) (errs, warnings []string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "helix.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, cfg, err := app.Load(quiet, file)
	render := func(e *config.Error) string {
		s := e.Error()
		if e.Hint != "" && !strings.Contains(s, e.Hint) {
			s += " (" + e.Hint + ")"
		}
		return strings.ReplaceAll(s, dir+string(filepath.Separator), "")
	}
	var ce config.Errors
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("not config.Errors: %v", err)
	}
	for _, e := range ce {
		errs = append(errs, render(e))
	}
	if cfg != nil {
		for _, w := range cfg.Warnings {
			warnings = append(warnings, render(w))
		}
	}
	return errs, warnings
}

func findAll(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.Contains(g, w) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s lack %q; got:\n  %s", what, w, strings.Join(got, "\n  "))
		}
	}
}

// Every MCP naming problem of a server is reported in one run, each at the workflow
// it concerns — also when a step elsewhere has an error of its own.
func TestValidateReportsEveryMCPNamingProblem(t *testing.T) {
	t.Parallel()
	errs, _ := validateYAML(t, `mcps:
  - id: tools
    addr: "127.0.0.1:0"
workflows:
  - id: format-code
    trigger: direct://format-code
    steps: []
  - id: format_code
    trigger: direct://format_code
    steps: []
  - id: a.b
    trigger: direct://a.b
    steps: []
  - id: a/b
    trigger: direct://a/b
    steps: []
  - id: "grüße"
    trigger: direct://gruesse
    steps: []
  - id: "two words"
    trigger: direct://two-words
    steps: []
  - id: broken
    trigger: direct://broken
    steps:
      - tranform: {starlang: "1"}
`)
	findAll(t, "errors", errs,
		`helix.yaml:8:5: workflows "format-code" and "format_code" both become the MCP tool "format_code"`,
		`helix.yaml:14:5: workflows "a.b" and "a/b" both become the MCP tool "a_b"`,
		`helix.yaml:17:5: mcp server tools: workflow "grüße": tool name "grüße" contains "ü"`,
		`helix.yaml:20:5: mcp server tools: workflow "two words": tool name`,
		`helix.yaml:26:9: workflows[6].steps[0]: unknown step "tranform"`,
	)
}

// A workflow whose id is a duplicate still has its body validated.
func TestValidateChecksTheBodyOfADuplicate(t *testing.T) {
	t.Parallel()
	errs, _ := validateYAML(t, `workflows:
  - id: greet
    trigger: direct://greet
    steps: []
  - id: greet
    trigger: direct://greet2
    steps:
      - tranform: {starlang: "1"}
      - target: nope://x
tools:
  - id: greet
    description: d
    input: {a: string}
    output: {b: string}
    steps:
      - set-body: {starlang: "1 +"}
`)
	findAll(t, "errors", errs,
		`helix.yaml:5:5: duplicate id "greet"`,
		`helix.yaml:8:9: `+`workflows[1].steps[0]: unknown step "tranform"`,
		`helix.yaml:9:`,
		`helix.yaml:11:5: duplicate id "greet"`,
		`helix.yaml:16:`,
	)
	if len(errs) < 5 {
		t.Errorf("want at least 5 errors, got:\n  %s", strings.Join(errs, "\n  "))
	}
}

// direct:// targets that no workflow consumes are warnings with a did-you-mean; they
// fail only at call time otherwise.
func TestValidateWarnsAboutUnconsumedDirectTargets(t *testing.T) {
	t.Parallel()
	errs, warnings := validateYAML(t, `workflows:
  - id: front
    trigger: direct://front
    error_handler:
      dead_letter_channel: direct://dead-leter
    steps:
      - target: direct://gret
      - target: {uri: direct://greet}
      - target: direct://${header.where}
      - choice:
          when:
            - starlang: "True"
              steps:
                - to: direct://nowhere
  - id: greet
    trigger: direct://greet
    steps: []
  - id: dead-letter
    trigger: direct://dead-letter
    steps: []
tools:
  - id: t
    description: d
    input: {a: string}
    output: {b: string}
    steps:
      - target: direct://greeet
`)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	findAll(t, "warnings", warnings,
		`helix.yaml:5:7: direct://dead-leter: no workflow consumes from it (did you mean direct://dead-letter?)`,
		`helix.yaml:7:17: direct://gret: no workflow consumes from it (did you mean direct://greet?)`,
		`helix.yaml:14:23: direct://nowhere: no workflow consumes from it`,
		`helix.yaml:27:17: direct://greeet: no workflow consumes from it (did you mean direct://greet?)`,
	)
	for _, w := range warnings {
		if strings.Contains(w, "direct://greet:") || strings.Contains(w, "${header.where}") {
			t.Errorf("spurious warning %s", w)
		}
	}
}

// A choice on HelixMcpIsError after an mcp:// target that throws never sees a failed
// call: the exception stops the workflow before the choice. Warn, with the fix.
func TestValidateWarnsAboutChoiceOnMcpIsErrorAfterThrowingTarget(t *testing.T) {
	t.Parallel()
	const choice = `
      - choice:
          when:
            - starlang: headers.get("HelixMcpIsError", "false") == "true"
              steps: [{log: "failed"}]
          otherwise:
            steps: [{log: "ok"}]
`
	errs, warnings := validateYAML(t, `workflows:
  - id: throws
    trigger: direct://throws
    steps:
      - target: mcp://localhost:8080/some-tool?transport=http
      - log: between`+choice+`
  - id: opted-out
    trigger: direct://opted-out
    steps:
      - target: mcp://localhost:8080/some-tool?transport=http&throwExceptionOnFailure=false`+choice+`
  - id: opted-out-by-parameters
    trigger: direct://opted-out-by-parameters
    steps:
      - target:
          uri: mcp://localhost:8080/some-tool
          parameters: {transport: http, throwExceptionOnFailure: false}`+choice+`
`)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	findAll(t, "warnings", warnings,
		`helix.yaml:9:25: choice tests HelixMcpIsError, but the mcp:// target at helix.yaml:5:17 fails the exchange on a tool error`,
		`throwExceptionOnFailure=false`,
	)
	n := 0
	for _, w := range warnings {
		if strings.Contains(w, "HelixMcpIsError") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("want exactly one HelixMcpIsError warning, got:\n  %s", strings.Join(warnings, "\n  "))
	}
}
