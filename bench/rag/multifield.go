package main

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/store/embedded"
	"github.com/arvenza/helix/internal/rag/textproc"
)

// multifieldTieBreaker is BEIR's Elasticsearch baseline's: a multi_match query of
// type best_fields over title and text with tie_breaker 0.5.
const multifieldTieBreaker = 0.5

// multifieldSystem reproduces how BEIR's published BM25 figures were measured,
// for comparison only (a Helix pipeline indexes one text per chunk): title and
// text are indexed as two fields, each with its own BM25 statistics, and a
// document scores its best field's BM25 plus 0.5 × the other's. Two embedded
// stores, with Helix's analyzer and BM25, hold the two fields.
type multifieldSystem struct {
	title, text *embedded.Store
	docs        int
}

func openMultifield(dir string, bm embedded.BM25, noSync bool) (*multifieldSystem, error) {
	opts := embedded.Options{BM25: &bm, NoSync: noSync, Analyzer: textproc.English()}
	title, err := embedded.Open(filepath.Join(dir, "title"), opts)
	if err != nil {
		return nil, err
	}
	text, err := embedded.Open(filepath.Join(dir, "text"), opts)
	if err != nil {
		return nil, errors.Join(err, title.Close())
	}
	return &multifieldSystem{title: title, text: text}, nil
}

func (s *multifieldSystem) ingest(ctx context.Context, docs []rag.Document) error {
	s.docs = len(docs)
	for _, d := range docs {
		raw := d.Metadata["beir"].(BEIRDoc)
		for _, f := range []struct {
			st   *embedded.Store
			text string
		}{{s.title, raw.Title}, {s.text, raw.Text}} {
			if f.text == "" {
				continue
			}
			c := rag.Chunk{ID: d.ID + "#0", DocID: d.ID, Text: f.text, End: len(f.text)}
			if err := f.st.Put(ctx, d.ID, d.Hash(), []rag.Chunk{c}, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// retrieve scores every document matching either field, as Elasticsearch does,
// and returns them best first.
func (s *multifieldSystem) retrieve(ctx context.Context, text string, depth int) ([]rag.Hit, error) {
	byTitle, err := s.title.SearchKeyword(ctx, text, s.docs, nil)
	if err != nil {
		return nil, err
	}
	byText, err := s.text.SearchKeyword(ctx, text, s.docs, nil)
	if err != nil {
		return nil, err
	}
	scores := map[string][2]float64{}
	for i, hits := range [][]rag.Hit{byTitle, byText} {
		for _, h := range hits {
			sc := scores[h.Chunk.DocID]
			sc[i] = h.Score
			scores[h.Chunk.DocID] = sc
		}
	}
	run := make([]RankedDoc, 0, len(scores))
	for id, sc := range scores {
		best, other := max(sc[0], sc[1]), min(sc[0], sc[1])
		run = append(run, RankedDoc{ID: id, Score: best + multifieldTieBreaker*other})
	}
	run = trecOrder(run)
	hits := make([]rag.Hit, min(depth, len(run)))
	for i := range hits {
		hits[i] = rag.Hit{Chunk: rag.Chunk{ID: run[i].ID + "#0", DocID: run[i].ID}, Score: run[i].Score}
	}
	return hits, nil
}

func (s *multifieldSystem) chunks(ctx context.Context) (int, error) {
	a, err := s.title.Stats(ctx)
	if err != nil {
		return 0, err
	}
	b, err := s.text.Stats(ctx)
	return a.Chunks + b.Chunks, err
}

func (s *multifieldSystem) close() error { return errors.Join(s.title.Close(), s.text.Close()) }
