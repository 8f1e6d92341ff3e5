package rag

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// Strategies of [Retrieve].
const (
	StrategyVector  = "vector"
	StrategyKeyword = "keyword"
	StrategyHybrid  = "hybrid"
)

// Defaults of [Query].
const (
	DefaultTopK = 5
	// DefaultCandidates is how many hits each arm of a hybrid search contributes
	// to the fusion.
	DefaultCandidates = 100
	// RRFK is the k of reciprocal rank fusion: a hit at rank r (from 1) of an arm
	// scores 1/(k+r). 60 is the value of the method's paper and of most engines.
	RRFK = 60
)

// Query is one retrieval.
type Query struct {
	Text     string
	Strategy string // vector, keyword or hybrid; "" means hybrid
	TopK     int    // 0 means DefaultTopK
	Filter   Filter
	// MinScore drops hits scoring below it (in the strategy's own scale).
	MinScore float64
	// Candidates is each arm's top N in a hybrid search; 0 means
	// max(DefaultCandidates, TopK).
	Candidates int
}

// Retrieve runs q against store. embedder may be nil: a vector search then fails,
// and a hybrid one falls back to keyword search (the caller is expected to have
// warned at build time). The hits are best first, at most TopK.
func Retrieve(ctx context.Context, store Store, embedder Embedder, q Query) ([]Hit, error) {
	if q.TopK <= 0 {
		q.TopK = DefaultTopK
	}
	strategy := q.Strategy
	if strategy == "" {
		strategy = StrategyHybrid
	}
	if strategy == StrategyHybrid && embedder == nil {
		strategy = StrategyKeyword
	}
	var hits []Hit
	var err error
	switch strategy {
	case StrategyKeyword:
		hits, err = store.SearchKeyword(ctx, q.Text, q.TopK, q.Filter)
	case StrategyVector:
		if embedder == nil {
			return nil, errors.New("vector retrieval needs an embedder (a rag-embed step)")
		}
		var vec []float32
		if vec, err = embedQuery(ctx, embedder, q.Text); err == nil {
			hits, err = store.SearchVector(ctx, vec, q.TopK, q.Filter)
		}
	case StrategyHybrid:
		hits, err = hybrid(ctx, store, embedder, q)
	default:
		return nil, fmt.Errorf("unknown retrieval strategy %q (use vector, keyword or hybrid)", q.Strategy)
	}
	if err != nil {
		return nil, err
	}
	if q.MinScore != 0 {
		kept := hits[:0]
		for _, h := range hits {
			if h.Score >= q.MinScore {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	return hits, nil
}

func embedQuery(ctx context.Context, e Embedder, text string) ([]float32, error) {
	vecs, err := e.Embed(ctx, []string{text}, EmbedQuery)
	if err != nil {
		return nil, fmt.Errorf("embed the query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("embed the query: the embedder returned %d vectors for 1 text", len(vecs))
	}
	return vecs[0], nil
}

// hybrid fuses the vector and keyword arms by reciprocal rank: each arm's top N
// hits score 1/(RRFK+rank), summed per chunk. Ties keep the vector arm's order.
func hybrid(ctx context.Context, store Store, embedder Embedder, q Query) ([]Hit, error) {
	n := q.Candidates
	if n <= 0 {
		n = max(DefaultCandidates, q.TopK)
	}
	vec, err := embedQuery(ctx, embedder, q.Text)
	if err != nil {
		return nil, err
	}
	dense, err := store.SearchVector(ctx, vec, n, q.Filter)
	if err != nil && !errors.Is(err, ErrNoVectors) {
		return nil, err
	}
	sparse, err := store.SearchKeyword(ctx, q.Text, n, q.Filter)
	if err != nil {
		return nil, err
	}
	return FuseRRF(q.TopK, dense, sparse), nil
}

// FuseRRF merges ranked lists by reciprocal rank fusion and returns the top k.
func FuseRRF(k int, lists ...[]Hit) []Hit {
	type fused struct {
		hit   Hit
		score float64
		first int // order of first appearance, for stable ties
	}
	byID := map[string]*fused{}
	order := 0
	for _, list := range lists {
		for rank, h := range list {
			f := byID[h.Chunk.ID]
			if f == nil {
				f = &fused{hit: h, first: order}
				order++
				byID[h.Chunk.ID] = f
			}
			f.score += 1 / float64(RRFK+rank+1)
		}
	}
	out := make([]*fused, 0, len(byID))
	for _, f := range byID {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].first < out[j].first
	})
	if len(out) > k {
		out = out[:k]
	}
	hits := make([]Hit, len(out))
	for i, f := range out {
		hits[i] = Hit{Chunk: f.hit.Chunk, Score: f.score}
	}
	return hits
}

// Matches reports whether metadata satisfies f (stores without a native filter
// use it).
func (f Filter) Matches(metadata map[string]any) bool {
	for k, want := range f {
		got, ok := metadata[k]
		if !ok || !equalValues(got, want) {
			return false
		}
	}
	return true
}

func equalValues(a, b any) bool {
	if x, ok := toFloat(a); ok {
		if y, ok := toFloat(b); ok {
			return x == y
		}
		return false
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}
