package embedded

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/arvenza/helix/internal/rag"
)

// TestHitsAreReadFromTheLog: a hit's chunk comes from its record in the log,
// not from memory, so a record damaged after the store opened makes the query
// that needs it fail with an error that says where (and never returns text the
// log no longer holds); other documents' hits still come back.
func TestHitsAreReadFromTheLog(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true})
	mustPut(t, s, "a", "h", chunks("a", map[string]any{"k": "v"}, "zebra crossing", "zebra stripes"), nil)
	mustPut(t, s, "b", "h", chunks("b", nil, "lion pride"), nil)
	hits, err := s.SearchKeyword(ctx, "zebra", 10, nil)
	if err != nil || len(hits) != 2 || hits[0].Chunk.Headings[0] != "H1" || hits[0].Chunk.Metadata["k"] != "v" {
		t.Fatalf("hits %+v, %v", hits, err)
	}
	b, err := os.ReadFile(logPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "zebra crossing")
	f, err := os.OpenFile(logPath(dir), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("Z"), int64(i)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = s.SearchKeyword(ctx, "zebra", 10, nil)
	if err == nil || !strings.Contains(err.Error(), `document "a" at log offset`) || !strings.Contains(err.Error(), "helix rag verify") {
		t.Fatalf("a damaged record gave %v", err)
	}
	if hits, err := s.SearchKeyword(ctx, "lion", 10, nil); err != nil || len(hits) != 1 || hits[0].Chunk.Text != "lion pride" {
		t.Fatalf("the undamaged document: %+v, %v", hits, err)
	}
}

// TestChunkEntryHoldsNoCorpus: what the index keeps per chunk is a few words
// (its document, lengths, flags), never its text, headings or metadata.
func TestChunkEntryHoldsNoCorpus(t *testing.T) {
	if size := unsafe.Sizeof(chunkEntry{}); size > 32 {
		t.Fatalf("a chunk entry takes %d bytes", size)
	}
	s, _ := open(t, t.TempDir(), Options{NoSync: true})
	meta := map[string]any{"tenant": "t1"}
	cs := []rag.Chunk{{Index: 0, Text: "one two", Metadata: meta}, {Index: 1, Text: "three", Metadata: map[string]any{"tenant": "t1"}}}
	mustPut(t, s, "d", "h", cs, nil)
	if d := s.idx.docs["d"]; d.metaMaps() != 1 {
		t.Fatalf("equal metadata of one document's chunks kept %d times", d.metaMaps())
	}
}

// TestHitAfterATornTailIsCut: the first write after a torn tail cuts it and
// goes where it was; the index must find that record where it went, not where
// the torn tail ended.
func TestHitAfterATornTailIsCut(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true})
	mustPut(t, s, "a", "h", chunks("a", nil, "alpha"), nil)
	s.Close()
	f, err := os.OpenFile(logPath(dir), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(frameMarker + "torn"))
	f.Close()
	s, _ = open(t, dir, Options{NoSync: true})
	mustPut(t, s, "b", "h", chunks("b", nil, "bravo"), nil)
	hits, err := s.SearchKeyword(ctx, "bravo alpha", 10, nil)
	if err != nil || len(hits) != 2 {
		t.Fatalf("hits %+v, %v", hits, err)
	}
}
