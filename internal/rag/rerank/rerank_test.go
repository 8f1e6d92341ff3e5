package rerank

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// lengthReranker scores a passage by its length: the expected order is the
// passages' lengths, computed.
type lengthReranker struct {
	seen  [][]string
	err   error
	wrong []float64 // answered instead, when set
}

func (l *lengthReranker) Name() string { return "length" }

func (l *lengthReranker) Score(_ context.Context, _ string, passages []string) ([]float64, error) {
	l.seen = append(l.seen, passages)
	if l.err != nil {
		return nil, l.err
	}
	if l.wrong != nil {
		return l.wrong, nil
	}
	out := make([]float64, len(passages))
	for i, p := range passages {
		out[i] = float64(len(p))
	}
	return out, nil
}

func hits(texts ...string) []rag.Hit {
	var out []rag.Hit
	for i, t := range texts {
		out = append(out, rag.Hit{Score: 1 / float64(i+1), Chunk: rag.Chunk{ID: t, Text: t, Metadata: map[string]any{"lang": "en"}}})
	}
	return out
}

func TestApplyReordersByScoreKeepsTopKAndRecordsRetrieval(t *testing.T) {
	t.Parallel()
	in := hits("bb", "dddd", "a", "ccc", "eeeee", "ffffff")
	r := &lengthReranker{}
	got, err := Apply(context.Background(), r, "q", in, Options{Candidates: 5, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Only the 5 candidates are read: "ffffff", the longest, was not one.
	if len(r.seen) != 1 || len(r.seen[0]) != 5 {
		t.Fatalf("reranker saw %v", r.seen)
	}
	want := []struct {
		id   string
		rank int
	}{{"eeeee", 5}, {"dddd", 2}, {"ccc", 4}}
	if len(got) != len(want) {
		t.Fatalf("%d hits, want %d", len(got), len(want))
	}
	for i, w := range want {
		h := got[i]
		if h.Chunk.ID != w.id || h.Score != float64(len(w.id)) {
			t.Errorf("hit %d: %s scored %v, want %s scored %d", i, h.Chunk.ID, h.Score, w.id, len(w.id))
		}
		if h.Chunk.Metadata[MetaRetrievalRank] != w.rank || h.Chunk.Metadata[MetaRetrievalScore] != 1/float64(w.rank) || h.Chunk.Metadata["lang"] != "en" {
			t.Errorf("hit %d metadata %v", i, h.Chunk.Metadata)
		}
	}
	// The input's metadata (a store's chunks) is not changed.
	for _, h := range in {
		if _, ok := h.Chunk.Metadata[MetaRetrievalRank]; ok {
			t.Fatal("Apply wrote into the input's metadata")
		}
	}
}

func TestApplyTiesKeepRetrievalOrderAndTitleIsRead(t *testing.T) {
	t.Parallel()
	in := hits("xx", "yy", "zz")
	in[2].Chunk.Title = "T"
	r := &lengthReranker{}
	got, err := Apply(context.Background(), r, "q", in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.seen[0][2] != "T\nzz" {
		t.Errorf("passage with a title read as %q", r.seen[0][2])
	}
	if got[0].Chunk.ID != "zz" || got[1].Chunk.ID != "xx" || got[2].Chunk.ID != "yy" {
		t.Errorf("order %s %s %s", got[0].Chunk.ID, got[1].Chunk.ID, got[2].Chunk.ID)
	}
}

func TestApplyRefusesBadScores(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		r    *lengthReranker
		want string
	}{
		"error":    {&lengthReranker{err: errors.New("boom")}, "rerank with length: boom"},
		"too few":  {&lengthReranker{wrong: []float64{1}}, "1 scores for 2 passages"},
		"too many": {&lengthReranker{wrong: []float64{1, 2, 3}}, "3 scores for 2 passages"},
		"NaN":      {&lengthReranker{wrong: []float64{1, math.NaN()}}, "passage 2 scored NaN"},
		"infinity": {&lengthReranker{wrong: []float64{math.Inf(1), 1}}, "passage 1 scored +Inf"},
	} {
		_, err := Apply(context.Background(), c.r, "q", hits("a", "b"), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
	if got, err := Apply(context.Background(), &lengthReranker{err: errors.New("never called")}, "q", nil, Options{}); err != nil || got != nil {
		t.Errorf("no hits: %v %v", got, err)
	}
}
