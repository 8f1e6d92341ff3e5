package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"unicode/utf8"
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
	// DefaultMaxTopK is the most hits a query may ask for when Query.MaxTopK
	// is 0: a caller cannot make a query return (and score, and send) the
	// whole store.
	DefaultMaxTopK = 100
	// DefaultMaxResultBytes bounds the hits' texts, titles, headings and
	// metadata together when Query.MaxBytes is 0.
	DefaultMaxResultBytes = 1 << 20
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
	// MaxTopK is the largest TopK accepted (a larger one is an error); 0 means
	// DefaultMaxTopK.
	MaxTopK int
	// MaxBytes bounds the hits' size (see [Retrieve]); 0 means
	// DefaultMaxResultBytes.
	MaxBytes int
}

// Retrieve runs q against store. embedder may be nil: a vector search then fails,
// and a hybrid one falls back to keyword search (the caller is expected to have
// warned at build time). The hits are best first, at most TopK; a TopK above
// MaxTopK is an error. The hits weigh at most MaxBytes (see [hitBytes]): the
// hit that crosses the bound has its text cut there, with a note that says so
// and how many hits follow unseen; those are left out.
func Retrieve(ctx context.Context, store Store, embedder Embedder, q Query) ([]Hit, error) {
	if q.TopK <= 0 {
		q.TopK = DefaultTopK
	}
	if q.MaxTopK <= 0 {
		q.MaxTopK = DefaultMaxTopK
	}
	if q.TopK > q.MaxTopK {
		return nil, fmt.Errorf("top_k %d is more than this pipeline returns (max_top_k %d): ask for at most %d passages", q.TopK, q.MaxTopK, q.MaxTopK)
	}
	if q.MaxBytes <= 0 {
		q.MaxBytes = DefaultMaxResultBytes
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
	return boundBytes(hits, q.MaxBytes)
}

// boundBytes keeps the hits that fit in max bytes, cutting the text of the one
// that crosses the bound (on a character boundary, with a note; the store's
// chunk is not changed). A first hit whose title, headings and metadata alone
// do not fit is an error: no text would be left to show.
func boundBytes(hits []Hit, max int) ([]Hit, error) {
	left := max
	for i, h := range hits {
		size := hitBytes(h)
		if size <= left {
			left -= size
			continue
		}
		// The hits are the caller's copies, but the slice may be the store's.
		hits = slices.Clone(hits)
		note := cutNote(max, len(hits)-i-1)
		if room := left - (size - len(h.Chunk.Text)) - len(note); room >= 0 {
			hits[i].Chunk.Text = cutText(h.Chunk.Text, room) + note
			return hits[:i+1], nil
		}
		if i == 0 {
			return nil, fmt.Errorf("the best passage (%s) is %d bytes without its text, more than the %d bytes a result may hold (max_result_bytes): raise max_result_bytes or store less metadata", h.Chunk.ID, size-len(h.Chunk.Text), max)
		}
		// No room for this hit at all: the previous one carries the note, in
		// place of its last bytes.
		prev := &hits[i-1].Chunk
		note = cutNote(max, len(hits)-i)
		prev.Text = cutText(prev.Text, len(prev.Text)+left-len(note)) + note
		return hits[:i], nil
	}
	return hits, nil
}

func cutNote(max, unseen int) string {
	return fmt.Sprintf("\n[cut here: the results are limited to %d bytes (max_result_bytes); %d more passages not shown]", max, unseen)
}

// cutText returns at most n bytes of s, ending on a character boundary.
func cutText(s string, n int) string {
	if n >= len(s) {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
	dense, sparse, err := hybridArms(ctx, store, embedder, q)
	if err != nil {
		return nil, err
	}
	return FuseRRF(q.TopK, dense, sparse), nil
}

// hybridArms runs the two arms of a hybrid search, each for its top N
// candidates: dense (vector; empty when the store holds no vectors) and sparse
// (keyword). RetrieveArms shows them as they are fused here.
func hybridArms(ctx context.Context, store Store, embedder Embedder, q Query) (dense, sparse []Hit, err error) {
	n := q.Candidates
	if n <= 0 {
		n = max(DefaultCandidates, q.TopK)
	}
	vec, err := embedQuery(ctx, embedder, q.Text)
	if err != nil {
		return nil, nil, err
	}
	dense, err = store.SearchVector(ctx, vec, n, q.Filter)
	if err != nil && !errors.Is(err, ErrNoVectors) {
		return nil, nil, err
	}
	sparse, err = store.SearchKeyword(ctx, q.Text, n, q.Filter)
	if err != nil {
		return nil, nil, err
	}
	return dense, sparse, nil
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

// equalValues: numbers equal numbers (whatever their Go type), strings
// strings, booleans booleans; values of different kinds are never equal.
func equalValues(a, b any) bool {
	if x, ok := toFloat(a); ok {
		y, ok := toFloat(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int16:
		return float64(n), true
	case int8:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint8:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// hitBytes is what a hit weighs in a result: its text, title, headings and
// metadata (as JSON).
func hitBytes(h Hit) int {
	n := len(h.Chunk.Text) + len(h.Chunk.Title)
	for _, hd := range h.Chunk.Headings {
		n += len(hd)
	}
	if len(h.Chunk.Metadata) > 0 {
		b, _ := json.Marshal(h.Chunk.Metadata)
		n += len(b)
	}
	return n
}
