package config

import (
	"strings"
	"testing"
)

// A missing ${env:NAME} is reported where the placeholder is written, once per
// variable, with what to do about it.
func TestMissingEnvVarIsReportedAtThePlaceholder(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"uri port", `workflows:
  - id: a
    trigger: http-server://127.0.0.1:${env:HELIX_TEST_UNSET_PORT}/greet
`, []string{`helix.yaml:3:38: environment variable HELIX_TEST_UNSET_PORT is not set (export HELIX_TEST_UNSET_PORT=… before starting helix, or give a default: ${env:HELIX_TEST_UNSET_PORT:-value})`}},
		{"quoted", `helix:
  management:
    addr: "127.0.0.1:${env:HELIX_TEST_UNSET_MPORT}"
`, []string{`helix.yaml:3:22: environment variable HELIX_TEST_UNSET_MPORT is not set`}},
		{"two in one value", `workflows:
  - id: a
    trigger: direct://a
    steps:
      - target: kafka://t?brokers=${env:HELIX_TEST_UNSET_B}&saslPassword=${env:HELIX_TEST_UNSET_PW}
`, []string{
			`helix.yaml:5:35: environment variable HELIX_TEST_UNSET_B is not set`,
			`helix.yaml:5:74: environment variable HELIX_TEST_UNSET_PW is not set`,
		}},
		{"block scalar", `workflows:
  - id: a
    trigger: direct://a
    steps:
      - log: |
          first line
          user ${env:HELIX_TEST_UNSET_USER}
`, []string{`helix.yaml:7:16: environment variable HELIX_TEST_UNSET_USER is not set`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := load(t, c.src)
			if len(errs) != len(c.want) {
				t.Fatalf("want %d errors, got:\n%v", len(c.want), errs)
			}
			for i, e := range errs.Sorted() {
				if !strings.HasPrefix(e.Error(), c.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s…", i, e, c.want[i])
				}
			}
		})
	}
}

// The value holding a missing variable cannot be checked: the errors its raw text
// would give (an address with "${env:…}" for a port) are not reported.
func TestMissingEnvVarHasNoFollowOnErrors(t *testing.T) {
	_, errs := load(t, `helix:
  management:
    addr: 127.0.0.1:${env:HELIX_TEST_UNSET_MPORT}
`)
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "HELIX_TEST_UNSET_MPORT is not set") {
		t.Fatalf("want only the missing variable, got:\n%v", errs)
	}
}

func TestWithoutFollowOnsKeepsOtherLines(t *testing.T) {
	env := &Error{Pos: Pos{File: "a.yaml", Line: 3, Col: 20}, Msg: "environment variable X is not set", masks: Pos{File: "a.yaml", Line: 3, Col: 11}}
	same := &Error{Pos: Pos{File: "a.yaml", Line: 3, Col: 5}, Msg: "bad address"}
	other := &Error{Pos: Pos{File: "a.yaml", Line: 4, Col: 5}, Msg: "unknown key"}
	otherFile := &Error{Pos: Pos{File: "b.yaml", Line: 3, Col: 5}, Msg: "unknown key"}
	got := Errors{same, env, other, otherFile}.WithoutFollowOns()
	if len(got) != 3 || got[0] != env || got[1] != other || got[2] != otherFile {
		t.Fatalf("got %v", got)
	}
}
