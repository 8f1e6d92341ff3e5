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
