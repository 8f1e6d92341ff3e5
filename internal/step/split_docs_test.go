package step_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// docSection returns the section of a Markdown file that starts at heading, up to
// the next heading of the same level.
func docSection(t *testing.T, file, heading string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no section %q", file, heading)
	}
	sec := doc[start+1:]
	if end := strings.Index(sec[len(heading):], "\n## "); end >= 0 {
		sec = sec[:len(heading)+end]
	}
	return sec
}

// codeBlocks returns the fenced code blocks of lang in md.
func codeBlocks(md, lang string) []string {
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

// Every YAML example of docs/patterns.md's split section loads, builds and gives the
// reply the text around it says.
func TestSplitDocsYAMLExamples(t *testing.T) {
	examples := map[string]struct {
		in   any
		want any
	}{
		"import-orders": {
			in: map[string]any{"orders": []any{
				map[string]any{"id": "a", "qty": 2, "price": 5},
				map[string]any{"id": "b", "qty": 0, "price": 1},
			}},
			want: map[string]any{"imported": []any{map[string]any{"id": "a", "total": 10}}, "failed": []any{1}},
		},
		"sum-csv": {in: "a,1\nb,2\nc,3\n", want: map[string]any{"lines": 3, "total": 6}},
	}
	blocks := codeBlocks(docSection(t, "../../docs/patterns.md", "## split"), "yaml")
	if len(blocks) == 0 {
		t.Fatal("no YAML example in the split section")
	}
	ran := map[string]bool{}
	for i, block := range blocks {
		cfg, err := config.LoadBytes("patterns.md", []byte(block))
		if err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		ignore := goleak.IgnoreCurrent()
		a, err := app.Build(cfg, app.Options{ManagementAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatalf("example %d: start: %v", i, err)
		}
		for _, w := range cfg.Workflows {
			ex, ok := examples[w.ID]
			if !ok {
				t.Errorf("example %d: workflow %q has no expected reply in this test", i, w.ID)
				continue
			}
			ran[w.ID] = true
			got, err := call(t, a.Context(), w.ID, ex.in)
			if err != nil {
				t.Errorf("%s: %v", w.ID, err)
				continue
			}
			jsonEqual(t, w.ID, got.In().Body(), ex.want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := a.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		cancel()
		goleak.VerifyNone(t, ignore)
	}
	for id := range examples {
		if !ran[id] {
			t.Errorf("workflow %q is no longer in the docs", id)
		}
	}
}
