package embedded

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/arvenza/helix/pkg/rag"
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
		if len(f) > 0 && !f.Matches(e.chunk.Metadata) {
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

// scratch is a keyword query's working memory: a score per chunk ordinal and
// the ordinals scored. Reused across queries, so a query allocates little.
type scratch struct {
	acc     []float64
	touched []uint32
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// SearchKeyword implements [rag.Store] with BM25, as Lucene computes it:
//
//	score(q, c) = Σ over the query's terms t of
//	  idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len(c)/avglen))
//	idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))
//
// where tf is t's count in chunk c, len(c) its number of terms, N the number of
// chunks and df those holding t. A term repeated in the query counts as often.
func (s *Store) SearchKeyword(ctx context.Context, query string, n int, f rag.Filter) ([]rag.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	toks := s.analyzer.Tokens(query)
	if len(toks) == 0 {
		return nil, nil
	}
	qtf := make(map[string]int, len(toks))
	for _, t := range toks {
		qtf[t]++
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
	numChunks := float64(x.liveChunks)
	avgLen := float64(x.liveLength) / numChunks
	var invAvg float64
	if avgLen > 0 {
		invAvg = 1 / avgLen
	}

	sc := scratches.Get().(*scratch)
	if cap(sc.acc) < len(x.chunks) {
		sc.acc = make([]float64, len(x.chunks), len(x.chunks)+len(x.chunks)/4)
	}
	acc, touched := sc.acc[:len(x.chunks)], sc.touched[:0]
	defer func() {
		for _, ord := range touched {
			acc[ord] = 0
		}
		sc.touched = touched
		scratches.Put(sc)
	}()
	checked := 0
	for term, count := range qtf {
		id, ok := x.termIDs[term]
		if !ok {
			continue
		}
		df := float64(x.df[id])
		if df == 0 {
			continue
		}
		if checked++; checked&255 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		weight := float64(count) * math.Log(1+(numChunks-df+0.5)/(df+0.5)) * (k1 + 1)
		for _, p := range x.postings[id] {
			e := &x.chunks[p.ord]
			if e.dead {
				continue
			}
			tf := float64(p.tf)
			norm := k1 * (1 - b + b*float64(e.length)*invAvg)
			if acc[p.ord] == 0 {
				touched = append(touched, p.ord)
			}
			acc[p.ord] += weight * tf / (tf + norm)
		}
	}
	top := topN{n: n, heap: make([]scored, 0, min(n, len(touched)))}
	for _, ord := range touched {
		score := acc[ord]
		if !top.admits(score, ord) {
			continue
		}
		if len(f) > 0 && !f.Matches(x.chunks[ord].chunk.Metadata) {
			continue
		}
		top.push(scored{ord, score})
	}
	return top.hits(x), nil
}
