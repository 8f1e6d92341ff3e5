package embedded

import (
	"context"
	"errors"
	"fmt"
	"github.com/arvenza/helix/internal/rag/ann"
	"math"
	"slices"

	"github.com/arvenza/helix/internal/rag"
)

// scored is a candidate hit: a chunk ordinal and its score.
type scored struct {
	ord   uint32
	score float64
}

// topN keeps the n best candidates in a min-heap (the worst at the root). Ties
// rank the earlier-stored chunk first, so results are deterministic.
type topN struct {
	n    int
	heap []scored
}

func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.ord > b.ord
}

// admits reports whether a candidate with this score could enter.
func (t *topN) admits(score float64, ord uint32) bool {
	return len(t.heap) < t.n || worse(t.heap[0], scored{ord, score})
}

func (t *topN) push(c scored) {
	h := t.heap
	if len(h) < t.n {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.heap = h
		return
	}
	h[0] = c
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && worse(h[l], h[m]) {
			m = l
		}
		if r < len(h) && worse(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// hits returns the kept candidates as hits, best first, their chunks read
// from the log.
func (t *topN) hits(x *index) ([]rag.Hit, error) {
	slices.SortFunc(t.heap, func(a, b scored) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return x.readHits(t.heap)
}

// readHits returns best as hits, in its order, their chunks read from the log.
func (x *index) readHits(best []scored) ([]rag.Hit, error) {
	out := make([]rag.Hit, len(best))
	// A document's chunks come from one record: read once per call.
	recs := make(map[*docEntry]*record, len(best))
	for i, c := range best {
		e := &x.chunks[c.ord]
		rec := recs[e.doc]
		if rec == nil {
			r, err := x.record(e.doc)
			if err != nil {
				return nil, err
			}
			recs[e.doc], rec = r, r
		}
		out[i] = rag.Hit{Chunk: rec.chunks[e.sub], Score: c.score}
	}
	return out, nil
}

// hits is top's hits, or an error naming the store.
func (s *Store) hits(top *topN, x *index) ([]rag.Hit, error) {
	out, err := top.hits(x)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.dir, err)
	}
	return out, nil
}

// SearchVector implements [rag.Store]: cosine similarity, exact over every
// stored vector below Options.VectorIndexThreshold vectors, approximate
// above it (see vector.go), where the hits keep their exact scores. A filter
// is applied while the index is scanned; one that matches too few chunks
// near the query makes the search exact over the matching chunks.
func (s *Store) SearchVector(ctx context.Context, vector []float32, n int, f rag.Filter) ([]rag.Hit, error) {
	var meta metaCache // the filter's decoded metadata
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	match, err := f.Parse()
	if err != nil {
		return nil, err
	}
	var sum float64
	for _, x := range vector {
		sum += float64(x) * float64(x)
	}
	if math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil, errors.New("the query vector holds NaN or infinite values")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("store %s: %w", s.dir, errClosed)
	}
	x := s.idx
	if x.dim == 0 {
		return nil, rag.ErrNoVectors
	}
	if len(vector) != x.dim {
		return nil, fmt.Errorf("the query vector has %d dimensions, the store holds %d-dimensional vectors (was the query embedded with the model the documents were?)", len(vector), x.dim)
	}
	if sum == 0 {
		return nil, errors.New("the query vector is all zeros (no direction to compare)")
	}
	if n <= 0 {
		return nil, nil
	}
	q := make([]float32, len(vector))
	inv := 1 / math.Sqrt(sum)
	for i, v := range vector {
		q[i] = float32(float64(v) * inv)
	}
	top := topN{n: n, heap: make([]scored, 0, min(n, x.liveChunks))}
	if s.searchVectorIndex(x, q, &top, match) {
		return s.hits(&top, x)
	}
	for ord := range x.chunks {
		if ord&8191 == 8191 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e := &x.chunks[ord]
		if e.dead || !e.hasVec {
			continue
		}
		score := float64(ann.Dot(q, x.vecs.at(ord)))
		if !top.admits(score, uint32(ord)) {
			continue
		}
		if match != nil && !match.Matches(x.metadataVia(uint32(ord), &meta)) {
			continue
		}
		top.push(scored{uint32(ord), score})
	}
	return s.hits(&top, x)
}

// TitleTieBreaker is the weight of a chunk's weaker field in its keyword score
// (see SearchKeyword).
const TitleTieBreaker = 0.5

// SearchKeyword implements [rag.Store] with BM25 over two fields, a chunk's text
// and its title, each scored as Lucene computes BM25 with that field's own
// statistics:
//
//	bm25_f(q, c) = Σ over the query's terms t of
//	  idf_f(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len_f(c)/avglen_f))
//	idf_f(t) = ln(1 + (N_f − df_f + 0.5) / (df_f + 0.5))
//
// where tf is t's count in field f of chunk c, len_f(c) the field's number of
// terms, N_f the number of chunks with terms in that field (every chunk for the
// text; the titled ones for the title), df_f those holding t there, and avglen_f
// the field's average length over those N_f chunks. A term repeated in the query
// counts as often. The chunk's score combines the two fields as
//
//	score(q, c) = max(text, title) + 0.5 · min(text, title)
//
// the best field's score plus half the other's: Elasticsearch's multi_match query
// of type best_fields with tie_breaker 0.5, the query of BEIR's published BM25
// baseline. Why two fields rather than the title put in front of the text: a
// title is a short, dense summary, and a query term matching it says more than
// the same term among an abstract's hundreds; as its own field the title gets
// its own length normalisation (a match in a 10-term title scores near the
// saturation) and its own idf (a term common in titles weighs less there). On
// BEIR NFCorpus this is worth about +0.006 nDCG@10 over the concatenated text
// (BENCHMARKS.md). The tie breaker keeps a match in both fields above a match in
// one, without counting a title word twice as much as a plain sum would.
//
// A chunk without a title scores its text's BM25 alone, exactly as with no
// title field at all: the text field's statistics ignore the titles.
func (s *Store) SearchKeyword(ctx context.Context, query string, n int, f rag.Filter) ([]rag.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	match, err := f.Parse()
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	toks := s.analyzer.Tokens(query)
	if len(toks) == 0 {
		return nil, nil
	}
	// The query's distinct terms with their counts, in sorted order: scores are
	// sums over them, and a fixed order makes them the same to the last bit
	// from one query (and store) to the next.
	toks = slices.Clone(toks) // the analyzer's slice is not ours to sort
	slices.Sort(toks)
	type queryTerm struct {
		term  string
		count int
	}
	qtf := make([]queryTerm, 0, len(toks))
	for _, t := range toks {
		if n := len(qtf); n > 0 && qtf[n-1].term == t {
			qtf[n-1].count++
		} else {
			qtf = append(qtf, queryTerm{t, 1})
		}
	}

	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("store %s: %w", s.dir, errClosed)
	}
	x := s.idx
	if x.liveChunks == 0 {
		return nil, nil
	}
	text := fieldStats{n: float64(x.liveChunks), invAvg: invAverage(x.liveLength, x.liveChunks)}
	title := fieldStats{n: float64(x.liveTitled), invAvg: invAverage(x.liveTitleLength, x.liveTitled)}
	var lists []*termList
	for _, qt := range qtf {
		id, ok := x.termIDs[qt.term]
		if !ok {
			continue
		}
		if df := x.df[id]; df > 0 {
			lists = append(lists, x.newTermList(&x.postings[id], df, qt.count, text, s.bm25, false))
		}
		if df := x.tdf[id]; df > 0 && x.liveTitled > 0 {
			lists = append(lists, x.newTermList(&x.tpostings[id], df, qt.count, title, s.bm25, true))
		}
	}
	top := topN{n: n}
	if err := x.maxScore(ctx, lists, &top, match); err != nil {
		return nil, err
	}
	return s.hits(&top, x)
}

// fieldStats are a field's BM25 collection statistics: N and 1/avglen.
type fieldStats struct {
	n, invAvg float64
}

// invAverage is 1/(total/count), 0 when there are no terms (computed as the
// store always did, so that untitled chunks keep their exact scores).
func invAverage(total int64, count int) float64 {
	if count <= 0 {
		return 0
	}
	if avg := float64(total) / float64(count); avg > 0 {
		return 1 / avg
	}
	return 0
}

// combineFields is a chunk's keyword score from its fields' BM25 scores: the
// best plus TitleTieBreaker × the other (see SearchKeyword). With no title
// score it is the text's score, unchanged.
func combineFields(text, title float64) float64 {
	if title == 0 {
		return text
	}
	return max(text, title) + TitleTieBreaker*min(text, title)
}
