package apicheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Go code docs/go-api.md shows is code that compiles and runs: every ```go
// block is, line for line (indentation and blank lines aside), an excerpt of an
// example or test file under pkg/, where go test compiles it and runs it, with its
// Output when it has one. A block edited in the page alone, or an example changed
// without the page, fails here naming the block.
func TestGoAPIDocShowsOnlyTestedCode(t *testing.T) {
	doc, err := os.ReadFile("../../docs/go-api.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(doc))
	if len(blocks) < 5 {
		t.Fatalf("docs/go-api.md has %d go blocks; is the page still there?", len(blocks))
	}
	sources := testSources(t, "../../pkg")
	for _, b := range blocks {
		if !slices.ContainsFunc(sources, func(src []string) bool { return containsRun(src, b.lines) }) {
			t.Errorf("docs/go-api.md:%d: this go block is not an excerpt of any *_test.go file under pkg/; "+
				"change the example there first and copy it here:\n%s", b.line, strings.Join(b.lines, "\n"))
		}
	}
}

type goBlock struct {
	line  int
	lines []string
}

// goBlocks returns the ```go blocks of a Markdown text, normalised.
func goBlocks(md string) []goBlock {
	var out []goBlock
	var cur *goBlock
	for i, l := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```go":
			cur = &goBlock{line: i + 1}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			if n := strings.TrimSpace(l); n != "" {
				cur.lines = append(cur.lines, n)
			}
		}
	}
	return out
}

// testSources returns the normalised lines of every *_test.go file under dir.
func testSources(t *testing.T, dir string) [][]string {
	t.Helper()
	var out [][]string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var lines []string
		for _, l := range strings.Split(string(src), "\n") {
			if n := strings.TrimSpace(l); n != "" {
				lines = append(lines, n)
			}
		}
		out = append(out, lines)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// containsRun reports whether run occurs in src as consecutive lines.
func containsRun(src, run []string) bool {
	for i := 0; i+len(run) <= len(src); i++ {
		if slices.Equal(src[i:i+len(run)], run) {
			return true
		}
	}
	return false
}
