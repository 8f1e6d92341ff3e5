package app_test

import (
	"strings"
	"testing"
)

// A Starlang syntax error is reported at its place in the YAML file, whatever the
// style of the scalar holding the script.
func TestStarlangSyntaxErrorPositionInYAML(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, script, want string }{
		{"block scalar", `
          starlang: |
            name = payload.get("name", "World"
            {"greeting": "Hello, " ++ name}`,
			`helix.yaml:7:31: workflows[0].steps[0].starlang: starlang: unclosed '(' (opened here, never closed before the end of the script)`},
		{"block scalar keep", `
          starlang: |+
            x = 1
            y = [x,`,
			`helix.yaml:8:17: workflows[0].steps[0].starlang: starlang: unclosed '['`},
		{"folded", `
          starlang: >
            x = 1
            y = 2`,
			`helix.yaml:7:19: workflows[0].steps[0].starlang: starlang: unexpected name y (expected the end of the line) (starlang: > joins the script's lines into one; write starlang: | to keep them)`},
		{"plain", `
          starlang: x = f"{payload}"`,
			`helix.yaml:6:25: workflows[0].steps[0].starlang: starlang: f-strings are not supported`},
		{"single-quoted", `
          starlang: 'x = payload.get("a"'`,
			`helix.yaml:6:37: workflows[0].steps[0].starlang: starlang: unclosed '('`},
		{"double-quoted", `
          starlang: "import json"`,
			`helix.yaml:6:22: workflows[0].steps[0].starlang: starlang: import is not supported`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := `workflows:
  - id: a
    trigger: direct://a
    steps:
      - transform:` + c.script + "\n"
			errs, _ := validateYAML(t, src)
			if len(errs) != 1 || !strings.HasPrefix(errs[0], c.want) {
				t.Fatalf("want %s…, got:\n%s", c.want, strings.Join(errs, "\n"))
			}
		})
	}
}
