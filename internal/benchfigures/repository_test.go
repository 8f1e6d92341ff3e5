package benchfigures

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allowed are comments of the repository that match a pattern and state no
// measurement. Each entry names the file and the reported figure, and says why.
var allowed = []struct{ path, match, why string }{
	{"bench/mcpload/mcpload_test.go", "req/s 700", "the summary the test expects from the made-up results it writes"},
}

// TestRepositoryHasNoBenchmarkFigures keeps measured numbers out of the comments of
// every Go file of the repository (Helix and the bench modules, tests included):
// they live in BENCHMARKS.md. `make lint` runs it beside staticcheck.
func TestRepositoryHasNoBenchmarkFigures(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if mod, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.Contains(string(mod), "module github.com/arvenza/helix\n") {
		t.Fatalf("%s is not the repository root (go.mod: %v)", root, err)
	}
	findings, err := Tree(root)
	if err != nil {
		t.Fatal(err)
	}
	used := make([]bool, len(allowed))
findings:
	for _, f := range findings {
		for i, a := range allowed {
			if f.Pos.Filename == a.path && f.Match == a.match {
				used[i] = true
				continue findings
			}
		}
		t.Error(f)
	}
	for i, a := range allowed {
		if !used[i] {
			t.Errorf("allow-list entry %s %q matches nothing any more: remove it", a.path, a.match)
		}
	}
}
