package embedded

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

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

// hits returns the kept candidates as hits, best first.
func (t *topN) hits(x *index) []rag.Hit {
	slices.SortFunc(t.heap, func(a, b scored) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	out := make([]rag.Hit, len(t.heap))
	for i, c := range t.heap {
		out[i] = rag.Hit{Chunk: copyChunk(&x.chunks[c.ord].chunk), Score: c.score}
	}
	return out
}

// SearchVector implements [rag.Store]: exact cosine similarity over every
// stored vector.
func (s *Store) SearchVector(ctx context.Context, vector []float32, n int, f rag.Filter) ([]rag.Hit, error) {
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
	dim := x.dim
	for ord := range x.chunks {
		if ord&8191 == 8191 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e := &x.chunks[ord]
		if e.dead || !e.hasVec {
			continue
		}
		score := float64(dot(q, x.vecs[ord*dim:(ord+1)*dim]))
		if !top.admits(score, uint32(ord)) {
			continue
		}
		if match != nil && !match.Matches(e.chunk.Metadata) {
			continue
		}
		top.push(scored{uint32(ord), score})
	}
	return top.hits(x), nil
}

// dot is the inner product of two equally long vectors, unrolled four ways so
// the additions do not wait on one another.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// scratch is a keyword query's working memory: a score per chunk ordinal for
// each field and the ordinals scored. Reused across queries, so a query
// allocates little.
type scratch struct {
	text, title []float64
	touched     []uint32
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

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
	k1, b := s.bm25.K1, s.bm25.B
	text := fieldStats{n: float64(x.liveChunks), invAvg: invAverage(x.liveLength, x.liveChunks)}
	title := fieldStats{n: float64(x.liveTitled), invAvg: invAverage(x.liveTitleLength, x.liveTitled)}

	sc := scratches.Get().(*scratch)
	if cap(sc.text) < len(x.chunks) {
		sc.text = make([]float64, len(x.chunks), len(x.chunks)+len(x.chunks)/4)
	}
	if x.liveTitled > 0 && cap(sc.title) < len(x.chunks) {
		sc.title = make([]float64, len(x.chunks), len(x.chunks)+len(x.chunks)/4)
	}
	accText, touched := sc.text[:len(x.chunks)], sc.touched[:0]
	var accTitle []float64
	if x.liveTitled > 0 {
		accTitle = sc.title[:len(x.chunks)]
	}
	defer func() {
		for _, ord := range touched {
			accText[ord] = 0
			if accTitle != nil {
				accTitle[ord] = 0
			}
		}
		sc.touched = touched
		scratches.Put(sc)
	}()
	// score adds one field's BM25 of a term to acc; other is the other field's
	// accumulator (nil when there is none), consulted to note each chunk once.
	score := func(acc, other []float64, postings []posting, df int32, count int, st fieldStats, length func(*chunkEntry) uint32) {
		weight := float64(count) * math.Log(1+(st.n-float64(df)+0.5)/(float64(df)+0.5)) * (k1 + 1)
		for _, p := range postings {
			e := &x.chunks[p.ord]
			if e.dead {
				continue
			}
			tf := float64(p.tf)
			norm := k1 * (1 - b + b*float64(length(e))*st.invAvg)
			if acc[p.ord] == 0 && (other == nil || other[p.ord] == 0) {
				touched = append(touched, p.ord)
			}
			acc[p.ord] += weight * tf / (tf + norm)
		}
	}
	checked := 0
	for _, qt := range qtf {
		id, ok := x.termIDs[qt.term]
		count := qt.count
		if !ok {
			continue
		}
		if checked++; checked&255 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if df := x.df[id]; df > 0 {
			score(accText, accTitle, x.postings[id], df, count, text, textLength)
		}
		if df := x.tdf[id]; df > 0 && accTitle != nil {
			score(accTitle, accText, x.tpostings[id], df, count, title, titleLength)
		}
	}
	top := topN{n: n, heap: make([]scored, 0, min(n, len(touched)))}
	for _, ord := range touched {
		score := accText[ord]
		if accTitle != nil {
			score = combineFields(score, accTitle[ord])
		}
		if !top.admits(score, ord) {
			continue
		}
		if match != nil && !match.Matches(x.chunks[ord].chunk.Metadata) {
			continue
		}
		top.push(scored{ord, score})
	}
	return top.hits(x), nil
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

func textLength(e *chunkEntry) uint32  { return e.length }
func titleLength(e *chunkEntry) uint32 { return e.tlen }

// combineFields is a chunk's keyword score from its fields' BM25 scores: the
// best plus TitleTieBreaker × the other (see SearchKeyword). With no title
// score it is the text's score, unchanged.
func combineFields(text, title float64) float64 {
	if title == 0 {
		return text
	}
	return max(text, title) + TitleTieBreaker*min(text, title)
}
