package source

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// Count is the number of documents Walk yields for well-formed files: one per
// file, per .jsonl line and per .json array element, nothing excluded.
func TestCountMatchesWalk(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, "a.md", "# A\n\ntext")
	write(t, root, "b.txt", "text")
	write(t, root, "sub/c.html", "<title>C</title><p>text</p>")
	write(t, root, "data/r.jsonl", "{\"id\":1,\"text\":\"x\"}\n\n  \n{\"id\":2,\"text\":\"y\"}\n{\"id\":3,\"text\":\"z\"}")
	write(t, root, "data/arr.json", "\ufeff[{\"text\":\"x\"},{\"text\":\"y\"}]")
	write(t, root, "data/one.json", "{\"text\":\"x\"}")
	write(t, root, "drafts/d.md", "excluded")
	write(t, root, "big.txt", strings.Repeat("x", 200))
	s := Files(root, FileOptions{Exclude: []string{"drafts/**"}, MaxFileBytes: 100, Logger: slog.New(slog.DiscardHandler)})
	n, err := s.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	walked := 0
	if err := s.Walk(context.Background(), func(rag.Document) error { walked++; return nil }); err != nil {
		t.Fatal(err)
	}
	// big.txt is over max_file_bytes: Walk skips it, Count counts it (it
	// does not read plain files).
	if walked != 9 || n != walked+1 {
		t.Errorf("Count %d, Walk %d documents; want 10 and 9", n, walked)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Count(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled count: %v", err)
	}
	if _, err := Files(root+"/nowhere", FileOptions{}).Count(context.Background()); err == nil {
		t.Error("counting a missing root succeeded")
	}
}
