package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
)

// callCounter embeds with one Embed call per batch, failing a batch that holds
// a text with POISON in it.
type callCounter struct{ calls, texts atomic.Int64 }

func (c *callCounter) Model() string { return "test" }
func (c *callCounter) Embed(_ context.Context, texts []string, _ rag.EmbedKind) ([][]float32, error) {
	c.calls.Add(1)
	for _, t := range texts {
		if strings.Contains(t, "POISON") {
			return nil, errors.New("the provider refused a text")
		}
	}
	c.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

type wholeDoc struct{}

func (wholeDoc) Chunk(_ context.Context, d rag.Document) ([]rag.Chunk, error) {
	return []rag.Chunk{{ID: d.ID + "#0", DocID: d.ID, Text: d.Text}}, nil
}

type nopStore struct {
	rag.Store
	puts atomic.Int64
}

func (s *nopStore) Put(context.Context, string, string, []rag.Chunk, [][]float32) error {
	s.puts.Add(1)
	return nil
}

// Documents waiting for a worker share one Embed call; a document the provider
// refuses fails alone, the others of its batch are stored.
func TestBatchedEmbedding(t *testing.T) {
	emb, st := &callCounter{}, &nopStore{}
	p := &Pipeline{cfg: config.PipelineConfig{ID: "t"}, opts: Options{Workers: 1, ProgressInterval: 1 << 62},
		logger: slog.New(slog.DiscardHandler), store: st, embedder: emb, chunker: wholeDoc{}, done: make(chan struct{})}
	b := &batch{p: p, ctx: context.Background(), known: func(string) string { return "" }, work: make(chan rag.Document, 100), seen: map[string]bool{}}
	for i := range 40 {
		text := fmt.Sprintf("document %d", i)
		if i == 17 {
			text = "POISON"
		}
		b.work <- rag.Document{ID: fmt.Sprint(i), Text: text}
	}
	close(b.work)
	for d := range b.work {
		b.process(b.gather(d))
	}
	// One call for the 40, refused; then one per document.
	if c := emb.calls.Load(); c != 41 {
		t.Errorf("%d Embed calls, want 41", c)
	}
	if st.puts.Load() != 39 || b.res.Ingested != 39 || b.res.Errors != 1 || !strings.Contains(b.firstErr.Error(), "document 17") {
		t.Errorf("puts %d, result %+v, first error %v", st.puts.Load(), b.res, b.firstErr)
	}

	emb2 := &callCounter{}
	p.embedder = emb2
	b = &batch{p: p, ctx: context.Background(), known: func(string) string { return "" }, work: make(chan rag.Document, 300), seen: map[string]bool{}}
	for i := range 300 {
		b.work <- rag.Document{ID: fmt.Sprint(i), Text: "text"}
	}
	close(b.work)
	for d := range b.work {
		b.process(b.gather(d))
	}
	if c := emb2.calls.Load(); c != 3 || emb2.texts.Load() != 300 {
		t.Errorf("%d Embed calls for %d texts, want 3 (batches of %d) for 300", c, emb2.texts.Load(), embedBatchTexts)
	}
}

// batchStore takes batches, refusing documents whose id is "17".
type batchStore struct {
	nopStore
	batches [][]string
}

func (s *batchStore) PutBatch(_ context.Context, docs []rag.PutDoc) []error {
	errs := make([]error, len(docs))
	var ids []string
	for i, d := range docs {
		ids = append(ids, d.ID)
		if d.ID == "17" {
			errs[i] = errors.New("refused")
		}
	}
	s.batches = append(s.batches, ids)
	return errs
}

// Without an embedder, documents waiting for a worker still share one
// PutBatch when the store takes batches (they share its fsync); a document the
// store refuses fails alone, and the others' hashes are recorded.
func TestKeywordOnlyDocumentsShareAPutBatch(t *testing.T) {
	st := &batchStore{}
	p := &Pipeline{cfg: config.PipelineConfig{ID: "t"}, opts: Options{Workers: 1, ProgressInterval: 1 << 62},
		logger: slog.New(slog.DiscardHandler), store: st, chunker: wholeDoc{}, done: make(chan struct{}), hashes: map[string]string{}}
	b := &batch{p: p, ctx: context.Background(), known: func(string) string { return "" }, work: make(chan rag.Document, 300), seen: map[string]bool{}}
	for i := range 300 {
		b.work <- rag.Document{ID: fmt.Sprint(i), Text: fmt.Sprintf("document %d", i)}
	}
	close(b.work)
	for d := range b.work {
		b.process(b.gather(d))
	}
	if len(st.batches) != 3 || len(st.batches[0]) != storeBatchDocs || st.puts.Load() != 0 {
		t.Fatalf("%d PutBatch calls (first of %d documents) and %d Puts, want 3 batches of up to %d and no Put", len(st.batches), len(st.batches[0]), st.puts.Load(), storeBatchDocs)
	}
	if b.res.Ingested != 299 || b.res.Errors != 1 || !strings.Contains(b.firstErr.Error(), "document 17: store: refused") {
		t.Fatalf("result %+v, first error %v", b.res, b.firstErr)
	}
	if p.hash("16") == "" || p.hash("17") != "" {
		t.Fatalf("hashes: 16 %q, 17 %q: a stored document's hash is recorded, a refused one's not", p.hash("16"), p.hash("17"))
	}

	// A store without PutBatch gets one Put per document.
	plain := &nopStore{}
	p.store = plain
	b = &batch{p: p, ctx: context.Background(), known: func(string) string { return "" }, work: make(chan rag.Document, 10), seen: map[string]bool{}}
	for i := range 10 {
		b.work <- rag.Document{ID: fmt.Sprint(i), Text: "text"}
	}
	close(b.work)
	for d := range b.work {
		b.process(b.gather(d))
	}
	if plain.puts.Load() != 10 || b.res.Ingested != 10 {
		t.Fatalf("%d Puts, result %+v", plain.puts.Load(), b.res)
	}
}
