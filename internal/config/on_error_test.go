package config

import (
	"strings"
	"testing"
)

func TestOnErrorStatus(t *testing.T) {
	cfg, errs := load(t, `
workflows:
  - id: all
    trigger: direct://all
    on_error:
      status: 503
    steps: [{log: x}]
  - id: by-class
    trigger: direct://by-class
    on_error:
      status:
        conflict: 422
        timeout: 503
    steps: [{log: x}]
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if oe := cfg.Workflows[0].OnError; oe == nil || oe.Status != 503 || oe.StatusByClass != nil {
		t.Errorf("all: %+v", oe)
	}
	oe := cfg.Workflows[1].OnError
	if oe == nil || oe.Status != 0 || oe.StatusByClass["conflict"] != 422 || oe.StatusByClass["timeout"] != 503 || len(oe.StatusByClass) != 2 {
		t.Errorf("by-class: %+v", oe)
	}
}

func TestOnErrorStatusMistakesArePositioned(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"status: 200", "helix.yaml:6:15: workflows[0].on_error.status: 200 is not an error status: give 400-599"},
		{"status: abc", "helix.yaml:6:15: workflows[0].on_error.status"},
		{"status: {conflit: 422}", `helix.yaml:6:16: workflows[0].on_error.status: unknown key "conflit" in on_error.status (did you mean "conflict"?)`},
		{"status: {timeout: 99}", "helix.yaml:6:25: workflows[0].on_error.status.timeout: 99 is not an error status"},
		{"status: [400]", "helix.yaml:6:15: workflows[0].on_error.status"},
		{"stat: 400", "helix.yaml:6:7: workflows[0].on_error"},
	}
	for _, c := range cases {
		_, errs := load(t, `
workflows:
  - id: w
    trigger: direct://w
    on_error:
      `+c.yaml+`
    steps: [{log: x}]
`)
		if errs == nil || !strings.Contains(errs.Error(), c.want) {
			t.Errorf("%s: errors %v, want %q", c.yaml, errs, c.want)
		}
	}
}
