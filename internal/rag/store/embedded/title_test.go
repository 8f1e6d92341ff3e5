package embedded

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// titled makes a one-chunk document with a title.
func titled(docID, title, text string) []rag.Chunk {
	return []rag.Chunk{{DocID: docID, Text: text, Title: title, End: len(text), Metadata: map[string]any{"title": title}}}
}

// bm25Field is the reference BM25 of one field (Lucene's formula), for the
// title tests: the query's terms over fields[i], with N the fields that have
// terms and avglen their average length.
func bm25Field(k1, b float64, fields []string, query string, i int) float64 {
	n, total := 0, 0
	for _, f := range fields {
		if l := len(strings.Fields(f)); l > 0 {
			n++
			total += l
		}
	}
	doc := strings.Fields(fields[i])
	if len(doc) == 0 {
		return 0
	}
	avg := float64(total) / float64(n)
	var score float64
	for _, t := range strings.Fields(query) {
		df, tf := 0, 0
		for _, f := range fields {
			if strings.Contains(" "+f+" ", " "+t+" ") {
				df++
			}
		}
		for _, w := range doc {
			if w == t {
				tf++
			}
		}
		if tf == 0 {
			continue
		}
		idf := math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
		score += idf * float64(tf) * (k1 + 1) / (float64(tf) + k1*(1-b+b*float64(len(doc))/avg))
	}
	return score
}

func TestKeywordScoresTitleAsItsOwnField(t *testing.T) {
	k1, b := 1.2, 0.75
	s, _ := open(t, t.TempDir(), Options{Analyzer: spaceAnalyzer, BM25: &BM25{K1: k1, B: b}})
	titles := []string{"garden tools", "", "cooking", "garden garden party"}
	texts := []string{
		"how to sharpen a spade and other tools",
		"garden party ideas for a garden in spring",
		"tools for the kitchen",
		"invitations and music",
	}
	for i := range texts {
		id := string(rune('a' + i))
		mustPut(t, s, id, "h", titled(id, titles[i], texts[i]), nil)
	}
	for _, q := range []string{"garden", "tools", "cooking", "garden tools party", "spring kitchen", "garden garden"} {
		hits, err := s.SearchKeyword(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{}
		for i := range texts {
			text, title := bm25Field(k1, b, texts, q, i), bm25Field(k1, b, titles, q, i)
			if text == 0 && title == 0 {
				continue
			}
			want[string(rune('a'+i))+"#0"] = max(text, title) + 0.5*min(text, title)
		}
		if len(hits) != len(want) {
			t.Fatalf("%q: %d hits %v, want %d", q, len(hits), ids(hits), len(want))
		}
		for j, h := range hits {
			if w, ok := want[h.Chunk.ID]; !ok || math.Abs(h.Score-w) > 1e-12 {
				t.Errorf("%q: %s scored %v, want %v", q, h.Chunk.ID, h.Score, w)
			}
			if j > 0 && h.Score > hits[j-1].Score {
				t.Errorf("%q: hits not best first: %v", q, hits)
			}
		}
	}
	// A title-only match is found, and the title comes back with the chunk.
	hits, _ := s.SearchKeyword(ctx, "cooking", 10, nil)
	if len(hits) != 1 || hits[0].Chunk.ID != "c#0" || hits[0].Chunk.Title != "cooking" {
		t.Fatalf("cooking: %+v", hits)
	}
}

// TestUntitledChunksScoreAsWithoutTitles: a chunk without a title scores
// exactly (bit for bit) what it scores in a store where no chunk has a title.
func TestUntitledChunksScoreAsWithoutTitles(t *testing.T) {
	c := newCorpus(11, 0)
	withTitles, _ := open(t, t.TempDir(), Options{NoSync: true})
	without, _ := open(t, t.TempDir(), Options{NoSync: true})
	untitled := map[string]bool{}
	for i := range 300 {
		id := "doc" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		text := c.text(30 + i%50)
		title := ""
		if i%3 != 0 {
			title = c.text(2 + i%6)
		} else {
			untitled[id+"#0"] = true
		}
		mustPut(t, withTitles, id, "h", titled(id, title, text), nil)
		mustPut(t, without, id, "h", titled(id, "", text), nil)
	}
	checked := 0
	for range 100 {
		q := c.text(4)
		a, err := withTitles.SearchKeyword(ctx, q, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := without.SearchKeyword(ctx, q, 1000, nil)
		plain := map[string]float64{}
		for _, h := range b {
			plain[h.Chunk.ID] = h.Score
		}
		for _, h := range a {
			if untitled[h.Chunk.ID] {
				checked++
				if h.Score != plain[h.Chunk.ID] {
					t.Fatalf("%q: untitled %s scored %v, %v in a store without titles", q, h.Chunk.ID, h.Score, plain[h.Chunk.ID])
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d untitled hits compared", checked)
	}
}

func TestTitleStatisticsFollowDeletesAndCompaction(t *testing.T) {
	k1, b := 0.9, 0.4
	opts := Options{Analyzer: spaceAnalyzer, BM25: &BM25{K1: k1, B: b}, NoSync: true, CompactMinGarbage: 1}
	dir := t.TempDir()
	s, logs := open(t, dir, opts)
	mustPut(t, s, "x", "h", titled("x", "alpha beta", "one two three"), nil)
	mustPut(t, s, "y", "h", titled("y", "alpha", "four five"), nil)
	mustPut(t, s, "z", "h", titled("z", "gamma delta epsilon", "six"), nil)
	// Replacing z drops its title terms from the statistics: the title field
	// is then x's and y's titles only.
	mustPut(t, s, "z", "h2", titled("z", "", "six seven"), nil)
	if err := s.Delete(ctx, "y"); err != nil {
		t.Fatal(err)
	}
	// What is live: x and the new z.
	titles := []string{"alpha beta", ""}
	texts := []string{"one two three", "six seven"}
	check := func(when string, s *Store) {
		t.Helper()
		hits, err := s.SearchKeyword(ctx, "alpha six", 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{
			"x#0": bm25Field(k1, b, titles, "alpha six", 0), // title only
			"z#0": bm25Field(k1, b, texts, "alpha six", 1),  // text only
		}
		if len(hits) != 2 {
			t.Fatalf("%s: hits %v", when, ids(hits))
		}
		for _, h := range hits {
			if math.Abs(h.Score-want[h.Chunk.ID]) > 1e-12 {
				t.Errorf("%s: %s scored %v, want %v", when, h.Chunk.ID, h.Score, want[h.Chunk.ID])
			}
		}
	}
	s.settle()
	check("live", s)
	if !strings.Contains(logs.String(), "compacted the log") {
		t.Fatalf("no compaction happened; logs:\n%s", logs)
	}
	s.Close()
	s, _ = open(t, dir, opts)
	check("reopened", s)
	hits, _ := s.SearchKeyword(ctx, "beta", 1, nil)
	if len(hits) != 1 || hits[0].Chunk.Title != "alpha beta" {
		t.Fatalf("the title did not survive compaction and a restart: %+v", hits)
	}
}

// testdata/v1-chunks.log was written by the store before titles were indexed
// (log format version 1): "guide.md" (two chunks, vectors, metadata title
// "Helix gardening guide"), "notes.txt" (metadata title ""), and "gone.txt",
// put then deleted.
func TestOpensVersion1Log(t *testing.T) {
	golden, err := os.ReadFile("testdata/v1-chunks.log")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(golden, []byte(logMagicV1)) {
		t.Fatalf("the golden file is not a version 1 log: %q", golden[:8])
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "chunks.log"), golden, 0o644); err != nil {
		t.Fatal(err)
	}
	s, logs := open(t, dir, Options{})
	docs, _ := s.Documents(ctx)
	if !reflect.DeepEqual(docs, map[string]string{"guide.md": "hash-guide.md", "notes.txt": "hash-notes.txt"}) {
		t.Fatalf("documents %v", docs)
	}
	if st, _ := s.Stats(ctx); st != (rag.Stats{Documents: 2, Chunks: 3}) {
		t.Fatalf("stats %+v", st)
	}
	// The titles come from the metadata the old pipeline stored, and count as
	// the title field: "helix" is only in guide.md's title.
	hits, err := s.SearchKeyword(ctx, "helix", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids(hits), []string{"guide.md#0", "guide.md#1"}) || hits[0].Chunk.Title != "Helix gardening guide" {
		t.Fatalf("helix: %+v", hits)
	}
	want := rag.Chunk{ID: "guide.md#0", DocID: "guide.md", Index: 0, Text: "Install the binary and run it.", Title: "Helix gardening guide",
		Start: 0, End: 30, Headings: []string{"Install"}, Metadata: map[string]any{"source": "docs/guide.md", "title": "Helix gardening guide", "lang": "en"}}
	if !reflect.DeepEqual(hits[0].Chunk, want) {
		t.Fatalf("chunk read back as\n%+v, want\n%+v", hits[0].Chunk, want)
	}
	hits, _ = s.SearchKeyword(ctx, "compost", 10, nil)
	if len(hits) != 1 || hits[0].Chunk.ID != "notes.txt#0" || hits[0].Chunk.Title != "" {
		t.Fatalf("compost: %+v", hits)
	}
	if hits, _ = s.SearchVector(ctx, []float32{0, 3}, 1, nil); len(hits) != 1 || hits[0].Chunk.ID != "guide.md#1" || math.Abs(hits[0].Score-1) > 1e-6 {
		t.Fatalf("vectors of the old log: %+v", hits)
	}
	// Reading changes nothing: the log stays version 1 until the next write
	// rewrites it in the current format.
	s.Close()
	if b, _ := os.ReadFile(logPath(dir)); !bytes.Equal(b, golden) {
		t.Fatal("opening a version 1 log rewrote it")
	}
	s, _ = open(t, dir, Options{})
	mustPut(t, s, "new.md", "h", titled("new.md", "Pruning roses", "cut above an outward bud"), [][]float32{{1, 0}})
	s.Close()
	b, _ := os.ReadFile(logPath(dir))
	if !bytes.HasPrefix(b, []byte(logMagic)) {
		t.Fatalf("after a put the log should be rewritten in the current format, not %q", b[:8])
	}
	s, _ = open(t, dir, Options{})
	if st, _ := s.Stats(ctx); st != (rag.Stats{Documents: 3, Chunks: 4}) {
		t.Fatalf("stats after the upgrade %+v", st)
	}
	for q, id := range map[string]string{"roses": "new.md#0", "helix": "guide.md#0", "compost": "notes.txt#0"} {
		if hits, _ := s.SearchKeyword(ctx, q, 1, nil); len(hits) != 1 || hits[0].Chunk.ID != id {
			t.Fatalf("%s after the upgrade: %+v", q, hits)
		}
	}
	if logs.String() != "" {
		t.Fatalf("opening a version 1 log logged: %s", logs)
	}
}

func TestUnknownLogVersionIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(logPath(dir), []byte("HXRAG09\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "of a format this version does not know") {
		t.Fatalf("Open = %v", err)
	}
	if b, _ := os.ReadFile(logPath(dir)); string(b) != "HXRAG09\n" {
		t.Fatalf("the unknown log was changed: %q", b)
	}
}
