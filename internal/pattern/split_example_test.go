package pattern_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// docs/patterns.md shows this example (TestSplitDocsGoExample checks they agree).
func ExampleNewSplit() {
	// Each line of the body, upper-cased, at most 4 lines at once; the results come
	// back in input order.
	upper := engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(strings.ToUpper(ex.In().Body().(string)))
		return nil
	})
	split, err := pattern.NewSplit(nil, pattern.SplitLines(),
		pattern.SplitOptions{Parallel: true, MaxConcurrency: 4}, upper)
	if err != nil {
		panic(err)
	}
	defer split.Stop(context.Background())

	ex := exchange.NewWithBody(exchange.InOut, "alpha\nbeta\ngamma\n")
	if err := split.Process(context.Background(), ex); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ex.In().Body())
	// Output: [ALPHA BETA GAMMA]
}

// The Go example of docs/patterns.md's split section is ExampleNewSplit's body.
func TestSplitDocsGoExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/patterns.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("split_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## split\n")
	if start < 0 {
		t.Fatal("docs/patterns.md has no split section")
	}
	section = section[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("no Go example in the split section")
	}
	lines := func(s string) string {
		var out []string
		for l := range strings.SplitSeq(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if !strings.Contains(lines(string(src)), lines(m[1])) {
		t.Errorf("the Go example in docs/patterns.md is not ExampleNewSplit's body; copy it from split_example_test.go:\n%s", m[1])
	}
}
