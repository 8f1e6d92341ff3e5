package config

import (
	"strings"
	"testing"
)

// ${env:NAME:-default} uses the default when NAME is unset or empty, like the shell.
func TestEnvDefault(t *testing.T) {
	t.Setenv("HELIX_TEST_PORT", "9191")
	t.Setenv("HELIX_TEST_EMPTY", "")
	cfg, errs := load(t, `workflows:
  - id: a
    trigger: http-server://127.0.0.1:${env:HELIX_TEST_PORT:-8080}/a
  - id: b
    trigger: http-server://127.0.0.1:${env:HELIX_TEST_UNSET_PORT:-8080}/b
  - id: c
    trigger: http-server://${env:HELIX_TEST_EMPTY:-127.0.0.1:8081}/c
`)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	for i, want := range []string{
		"http-server://127.0.0.1:9191/a", "http-server://127.0.0.1:8080/b", "http-server://127.0.0.1:8081/c",
	} {
		if got := cfg.Workflows[i].From; got != want {
			t.Errorf("workflow %d trigger %q, want %q", i, got, want)
		}
	}
	_, errs = load(t, "workflows:\n  - id: a\n    trigger: direct://${env:HELIX_TEST_UNSET_PORT}\n")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), ":-") {
		t.Fatalf("a missing variable without default should be an error that mentions the :- default syntax: %v", errs)
	}
}
