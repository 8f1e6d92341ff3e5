package app_test

import (
	"strings"
	"testing"
)

// A missing ${env:NAME} is the only error reported for the value that holds it: the
// checks of that value's raw text (a port that is "${env:…}", a trigger URI with a
// placeholder) would only confuse.
func TestMissingEnvVarSaysSoAndNothingElse(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, src, want string }{
		{"trigger port", `workflows:
  - id: a
    trigger: http-server://127.0.0.1:${env:HELIX_TEST_UNSET_PORT}/greet
    steps:
      - log: hi
`, "helix.yaml:3:38: environment variable HELIX_TEST_UNSET_PORT is not set"},
		{"management port", `helix:
  management:
    addr: 127.0.0.1:${env:HELIX_TEST_UNSET_PORT}
workflows:
  - id: a
    trigger: direct://a
    steps:
      - log: hi
`, "helix.yaml:3:21: environment variable HELIX_TEST_UNSET_PORT is not set"},
		{"secret in a target", `workflows:
  - id: a
    trigger: direct://a
    steps:
      - target: postgres://helix:${env:HELIX_TEST_UNSET_PW}@127.0.0.1:5432/helix?query=select 1
`, "helix.yaml:5:34: environment variable HELIX_TEST_UNSET_PW is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs, _ := validateYAML(t, c.src)
			if len(errs) != 1 || !strings.HasPrefix(errs[0], c.want) {
				t.Fatalf("want only %q, got:\n%s", c.want, strings.Join(errs, "\n"))
			}
			if !strings.Contains(errs[0], "${env:HELIX_TEST_UNSET_") || !strings.Contains(errs[0], ":-value}") {
				t.Errorf("no hint about a default: %s", errs[0])
			}
		})
	}
}
