package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/textproc"
)

var ctx = context.Background()

// syncBuffer is a log sink safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func open(t testing.TB, dir string, opts Options) (*Store, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, logs
}

func chunks(docID string, meta map[string]any, texts ...string) []rag.Chunk {
	out := make([]rag.Chunk, len(texts))
	for i, t := range texts {
		out[i] = rag.Chunk{DocID: docID, Index: i, Text: t, Start: i * 10, End: i*10 + len(t), Headings: []string{"H1"}, Metadata: meta}
	}
	return out
}

func ids(hits []rag.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Chunk.ID
	}
	return out
}

func mustPut(t testing.TB, s *Store, docID, hash string, cs []rag.Chunk, vecs [][]float32) {
	t.Helper()
	if err := s.Put(ctx, docID, hash, cs, vecs); err != nil {
		t.Fatal(err)
	}
}

func TestPutSearchDeleteReplace(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{})
	mustPut(t, s, "a", "ha", chunks("a", map[string]any{"lang": "en"}, "Cats chase mice", "Dogs chase cats"), nil)
	mustPut(t, s, "b", "hb", chunks("b", nil, "Birds sing"), nil)

	if st, _ := s.Stats(ctx); st != (rag.Stats{Documents: 2, Chunks: 3}) {
		t.Fatalf("stats %+v", st)
	}
	if docs, _ := s.Documents(ctx); !reflect.DeepEqual(docs, map[string]string{"a": "ha", "b": "hb"}) {
		t.Fatalf("documents %v", docs)
	}
	hits, err := s.SearchKeyword(ctx, "chasing cats", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); !reflect.DeepEqual(got, []string{"a#1", "a#0"}) && !reflect.DeepEqual(got, []string{"a#0", "a#1"}) {
		t.Fatalf("hits %v", got)
	}
	h := hits[0].Chunk
	if h.DocID != "a" || h.Metadata["lang"] != "en" || !reflect.DeepEqual(h.Headings, []string{"H1"}) || h.End-h.Start != len(h.Text) {
		t.Fatalf("chunk not kept whole: %+v", h)
	}
	// Hits are copies: changing one does not change the store.
	h.Metadata["lang"] = "xx"
	if again, _ := s.SearchKeyword(ctx, "cats", 1, nil); again[0].Chunk.Metadata["lang"] != "en" {
		t.Fatal("a hit's metadata aliases the store's")
	}

	// Replace: the old chunks are gone, the new one is found.
	mustPut(t, s, "a", "ha2", chunks("a", nil, "Horses gallop"), nil)
	if hits, _ := s.SearchKeyword(ctx, "cats", 10, nil); len(hits) != 0 {
		t.Fatalf("replaced chunks still found: %v", ids(hits))
	}
	if hits, _ := s.SearchKeyword(ctx, "galloping horse", 10, nil); !reflect.DeepEqual(ids(hits), []string{"a#0"}) {
		t.Fatalf("new chunk not found: %v", ids(hits))
	}
	if st, _ := s.Stats(ctx); st != (rag.Stats{Documents: 2, Chunks: 2}) {
		t.Fatalf("stats after replace %+v", st)
	}

	// Delete, and deleting an unknown id is fine.
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "nope"); err != nil {
		t.Fatal(err)
	}
	if hits, _ := s.SearchKeyword(ctx, "horses", 10, nil); len(hits) != 0 {
		t.Fatalf("deleted chunks still found: %v", ids(hits))
	}
	if docs, _ := s.Documents(ctx); !reflect.DeepEqual(docs, map[string]string{"b": "hb"}) {
		t.Fatalf("documents %v", docs)
	}
	// A document with no chunks is recorded (its hash makes ingest incremental).
	mustPut(t, s, "empty", "he", nil, nil)
	if docs, _ := s.Documents(ctx); docs["empty"] != "he" {
		t.Fatalf("empty document not recorded: %v", docs)
	}
	// Filters apply to keyword search.
	mustPut(t, s, "c", "hc", chunks("c", map[string]any{"year": 2024}, "Birds fly"), nil)
	hits, _ = s.SearchKeyword(ctx, "birds", 10, rag.Filter{"year": 2024.0})
	if !reflect.DeepEqual(ids(hits), []string{"c#0"}) {
		t.Fatalf("filtered hits %v", ids(hits))
	}
}

// spaceAnalyzer makes the BM25 test independent of stemming.
var spaceAnalyzer = textproc.AnalyzerFunc(strings.Fields)

func TestBM25MatchesFormula(t *testing.T) {
	k1, b := 1.2, 0.75
	s, _ := open(t, t.TempDir(), Options{Analyzer: spaceAnalyzer, BM25: &BM25{K1: k1, B: b}})
	texts := []string{
		"apple banana apple",          // len 3
		"banana cherry",               // len 2
		"cherry cherry cherry durian", // len 4
	}
	mustPut(t, s, "d", "h", chunks("d", nil, texts...), nil)

	// By hand: N=3, avglen=3. "apple": df=1, idf=ln(1+2.5/1.5)=ln(8/3); in
	// chunk 0 tf=2 and len=avglen, so the score is idf·2·(k1+1)/(2+k1).
	want := math.Log(8.0/3) * 2 * (k1 + 1) / (2 + k1)
	hits, err := s.SearchKeyword(ctx, "apple", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Chunk.ID != "d#0" || math.Abs(hits[0].Score-want) > 1e-9 {
		t.Fatalf("apple: %+v, want d#0 scoring %v", hits, want)
	}

	// "cherry banana": both terms have df=2, idf=ln(1+1.5/2.5)=ln(1.6).
	idf := math.Log(1.6)
	term := func(tf, length float64) float64 {
		return idf * tf * (k1 + 1) / (tf + k1*(1-b+b*length/3))
	}
	wantScores := map[string]float64{
		"d#0": term(1, 3),              // banana
		"d#1": term(1, 2) + term(1, 2), // banana + cherry
		"d#2": term(3, 4),              // cherry ×3
	}
	hits, _ = s.SearchKeyword(ctx, "cherry banana", 10, nil)
	if !reflect.DeepEqual(ids(hits), []string{"d#1", "d#2", "d#0"}) {
		t.Fatalf("order %v (scores %+v)", ids(hits), wantScores)
	}
	for _, h := range hits {
		if math.Abs(h.Score-wantScores[h.Chunk.ID]) > 1e-9 {
			t.Errorf("%s scored %v, want %v", h.Chunk.ID, h.Score, wantScores[h.Chunk.ID])
		}
	}
	// A term twice in the query counts twice.
	hits, _ = s.SearchKeyword(ctx, "apple apple", 1, nil)
	if math.Abs(hits[0].Score-2*want) > 1e-9 {
		t.Fatalf("repeated term scored %v, want %v", hits[0].Score, 2*want)
	}
	// top-n cuts.
	if hits, _ = s.SearchKeyword(ctx, "cherry banana", 2, nil); !reflect.DeepEqual(ids(hits), []string{"d#1", "d#2"}) {
		t.Fatalf("top 2: %v", ids(hits))
	}
	// Deleted chunks no longer count in N, df or the average length.
	mustPut(t, s, "d", "h2", chunks("d", nil, texts[0]), nil)
	hits, _ = s.SearchKeyword(ctx, "apple", 1, nil)
	solo := math.Log(1+0.5/1.5) * 2 * (k1 + 1) / (2 + k1)
	if math.Abs(hits[0].Score-solo) > 1e-9 {
		t.Fatalf("after replace: %v, want %v", hits[0].Score, solo)
	}
}

func TestVectorSearchTopKFilter(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{})
	angle := func(deg float64) []float32 {
		r := deg * math.Pi / 180
		return []float32{float32(3 * math.Cos(r)), float32(3 * math.Sin(r))} // not unit: the store normalises
	}
	mustPut(t, s, "en", "1", chunks("en", map[string]any{"lang": "en"}, "zero", "ten", "ninety"), [][]float32{angle(0), angle(10), angle(90)})
	mustPut(t, s, "fr", "2", chunks("fr", map[string]any{"lang": "fr"}, "five", "forty"), [][]float32{angle(5), angle(40)})

	hits, err := s.SearchVector(ctx, angle(4), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids(hits), []string{"fr#0", "en#0", "en#1"}) {
		t.Fatalf("top 3: %v", ids(hits))
	}
	if want := math.Cos(1 * math.Pi / 180); math.Abs(hits[0].Score-want) > 1e-6 {
		t.Fatalf("cosine %v, want %v", hits[0].Score, want)
	}
	hits, _ = s.SearchVector(ctx, angle(4), 3, rag.Filter{"lang": "en"})
	if !reflect.DeepEqual(ids(hits), []string{"en#0", "en#1", "en#2"}) {
		t.Fatalf("filtered: %v", ids(hits))
	}
	if hits, _ = s.SearchVector(ctx, angle(4), 10, rag.Filter{"lang": "de"}); len(hits) != 0 {
		t.Fatalf("filter matching nothing: %v", ids(hits))
	}
	s.Delete(ctx, "fr")
	if hits, _ = s.SearchVector(ctx, angle(4), 1, nil); !reflect.DeepEqual(ids(hits), []string{"en#0"}) {
		t.Fatalf("after delete: %v", ids(hits))
	}

	// Another dimension is refused, saying so.
	err = s.Put(ctx, "x", "3", chunks("x", nil, "x"), [][]float32{{1, 2, 3}})
	if err == nil || !strings.Contains(err.Error(), "3 dimensions") || !strings.Contains(err.Error(), "2-dimensional") {
		t.Fatalf("dimension mismatch: %v", err)
	}
	if _, err = s.SearchVector(ctx, []float32{1, 2, 3}, 1, nil); err == nil {
		t.Fatal("query of another dimension accepted")
	}

	// A store without vectors says so.
	plain, _ := open(t, t.TempDir(), Options{})
	mustPut(t, plain, "a", "1", chunks("a", nil, "text"), nil)
	if _, err := plain.SearchVector(ctx, []float32{1, 0}, 1, nil); !errors.Is(err, rag.ErrNoVectors) {
		t.Fatalf("no vectors: %v", err)
	}
}

func TestMixedVectorAndPlainDocuments(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{})
	mustPut(t, s, "plain", "1", chunks("plain", nil, "no vector here"), nil)
	mustPut(t, s, "vec", "2", chunks("vec", nil, "with vector"), [][]float32{{0, 1}})
	hits, err := s.SearchVector(ctx, []float32{0, 1}, 10, nil)
	if err != nil || !reflect.DeepEqual(ids(hits), []string{"vec#0"}) {
		t.Fatalf("hits %v, %v", ids(hits), err)
	}
}

func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, Options{})
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "already open") {
		t.Fatalf("second open: %v", err)
	}
}

func TestClosedStoreRefusesWrites(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a", "1", chunks("a", nil, "x"), nil); err == nil {
		t.Fatal("put after close accepted")
	}
	if _, err := s.SearchKeyword(ctx, "x", 1, nil); err == nil {
		t.Fatal("search after close accepted")
	}
	// The lock is released.
	s2, _ := open(t, dir, Options{})
	mustPut(t, s2, "a", "1", chunks("a", nil, "x"), nil)
}

func TestNotALog(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(logPath(dir), []byte("some other file entirely"), 0o644)
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "not a Helix RAG store log") {
		t.Fatalf("open: %v", err)
	}
	if b, _ := os.ReadFile(logPath(dir)); string(b) != "some other file entirely" {
		t.Fatal("a foreign file was changed")
	}
}

func TestBadOptions(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{BM25: &BM25{K1: 1, B: 2}}); err == nil {
		t.Fatal("b=2 accepted")
	}
}

func TestHostileInput(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{NoSync: true})
	// 10 MB in long words: huge, yet quick to analyse under the race detector.
	word := strings.Repeat("loremipsum", 10) + " "
	big := strings.Repeat(word, 10<<20/len(word)) + "dolor sit amet"
	mustPut(t, s, "big", "1", chunks("big", nil, big), [][]float32{{1, 0, 0}})
	if hits, err := s.SearchKeyword(ctx, "dolor", 5, nil); err != nil || len(hits) != 1 {
		t.Fatalf("big chunk: %v %v", len(hits), err)
	}
	var q strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&q, "term%d ", i)
	}
	q.WriteString("amet")
	if hits, err := s.SearchKeyword(ctx, q.String(), 5, nil); err != nil || len(hits) != 1 {
		t.Fatalf("huge query: %v %v", len(hits), err)
	}
	for _, query := range []string{"", "   ", "the and of", "\xff\xfe"} {
		if hits, err := s.SearchKeyword(ctx, query, 5, nil); err != nil || len(hits) != 0 {
			t.Fatalf("query %q: %v %v", query, ids(hits), err)
		}
	}
	if hits, err := s.SearchKeyword(ctx, "lorem", 0, nil); err != nil || len(hits) != 0 {
		t.Fatalf("n=0: %v %v", hits, err)
	}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	bad := []struct {
		name string
		vecs [][]float32
	}{
		{"NaN", [][]float32{{nan, 0, 0}}},
		{"infinite", [][]float32{{inf, 0, 0}}},
		{"zeros", [][]float32{{0, 0, 0}}},
		{"count", [][]float32{{1, 0, 0}, {0, 1, 0}}},
		{"empty", [][]float32{{}}},
	}
	for _, c := range bad {
		if err := s.Put(ctx, "v", "1", chunks("v", nil, "x"), c.vecs); err == nil {
			t.Errorf("%s vectors accepted", c.name)
		}
	}
	for _, q := range [][]float32{{nan, 0, 0}, {0, 0, 0}, nil} {
		if _, err := s.SearchVector(ctx, q, 3, nil); err == nil {
			t.Errorf("query vector %v accepted", q)
		}
	}
	if err := s.Put(ctx, "", "1", nil, nil); err == nil {
		t.Error("empty document id accepted")
	}
	if err := s.Put(ctx, "a", "1", chunks("other", nil, "x"), nil); err == nil {
		t.Error("a chunk of another document accepted")
	}
	// The refused puts left nothing behind.
	if st, _ := s.Stats(ctx); st != (rag.Stats{Documents: 1, Chunks: 1}) {
		t.Fatalf("stats %+v", st)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.SearchKeyword(cancelled, "lorem", 1, nil); err == nil {
		t.Error("cancelled query ran")
	}
}

func TestMetadataTypesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{})
	meta := map[string]any{"s": "x", "i": 3, "f": 1.5, "b": true, "n": nil, "list": []any{"a", 1.0}}
	mustPut(t, s, "a", "1", chunks("a", meta, "text"), nil)
	s.Close()
	s, _ = open(t, dir, Options{})
	hits, _ := s.SearchKeyword(ctx, "text", 1, nil)
	if len(hits) != 1 || !reflect.DeepEqual(hits[0].Chunk.Metadata, meta) {
		t.Fatalf("metadata %#v, want %#v", hits, meta)
	}
}
