package app_test

import (
	"strings"
	"testing"
)

// A query parameter of an http:// target that looks like a misspelled option is sent
// to the server, as documented, so it is a warning, not an error; real query
// parameters draw none.
func TestHTTPNearMissOptionWarns(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, `
workflows:
  - id: search
    trigger: direct://search
    steps:
      - target: http://example.com/search?q=otters&timeot=5s
      - target: https://example.com/find?page=2&timeout=5s
`)
	if err != nil {
		t.Fatal(err)
	}
	w := a.Config().Warnings.Error()
	want := `helix.yaml:6:17: http://example.com/search?q=otters&timeot=5s: query parameter timeot is sent to the server, not read by http:// (did you mean the option timeout?)`
	if !strings.Contains(w, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", w, want)
	}
	if strings.Contains(w, "page") || strings.Count(w, "query parameter") != 1 {
		t.Errorf("unexpected warnings:\n%s", w)
	}
}
