// Package rerank reorders retrieved passages with a model that reads the query
// and each passage together (a cross-encoder), which judges relevance better
// than the retrieval's arms, which score query and passage apart (BM25, vector
// similarity) — but costs a model run per passage, so it is applied to the top
// N candidates of a retrieval only.
//
// A [Reranker] scores passages; [Apply] reorders hits by those scores. The
// providers are sub-packages: crossencoder (a local ONNX model) and httprerank
// (a rerank endpoint speaking Cohere's, Jina's or TEI's wire format); [New]
// makes one from a rag-rerank step's configuration.
package rerank

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sort"

	"github.com/arvenza/helix/internal/rag"
)

// Reranker scores passages for a query: one score per passage, in order,
// higher is more relevant. Implementations are safe for concurrent use and
// return promptly when ctx ends.
type Reranker interface {
	Score(ctx context.Context, query string, passages []string) ([]float64, error)
	// Name names the model ("onnx:model.onnx:…", "http:cohere:rerank-v3.5").
	Name() string
}

// Metadata keys [Apply] adds to a reranked hit: where the retrieval had put it
// (its rank from 1, among the candidates) and the score it gave it.
const (
	MetaRetrievalRank  = "retrieval_rank"
	MetaRetrievalScore = "retrieval_score"
)

// Defaults of a rag-rerank step.
const (
	DefaultCandidates = 50
	// OnErrorFail fails the query when the reranker fails; OnErrorKeepOrder
	// answers with the retrieval's order instead (and logs the error).
	OnErrorFail      = "fail"
	OnErrorKeepOrder = "keep-order"
)

// Options tune [Apply].
type Options struct {
	// Candidates is how many of the hits (the best first) are reranked; the
	// rest are dropped. 0: DefaultCandidates.
	Candidates int
	// TopK is how many reranked hits are kept; 0: all the candidates.
	TopK int
}

// Passage is the text a reranker reads for a chunk: its title, if any, on a
// line of its own before its text, as cross-encoders are trained (title and
// body).
func Passage(c rag.Chunk) string {
	if c.Title == "" {
		return c.Text
	}
	return c.Title + "\n" + c.Text
}

// Apply reranks the first Candidates hits by r's scores and returns the best
// TopK, best first. A hit's Score becomes the reranker's; its retrieval rank
// and score go into its metadata ([MetaRetrievalRank], [MetaRetrievalScore]),
// in a copy: the hits' chunks may be a store's. Equal scores keep the
// retrieval's order. A reranker that fails, or answers with a score per
// passage that is not a number, is an error: the hits are not returned in an
// order that claims to be the reranker's.
func Apply(ctx context.Context, r Reranker, query string, hits []rag.Hit, o Options) ([]rag.Hit, error) {
	if o.Candidates <= 0 {
		o.Candidates = DefaultCandidates
	}
	cands := hits[:min(len(hits), o.Candidates)]
	if len(cands) == 0 {
		return nil, nil
	}
	passages := make([]string, len(cands))
	for i, h := range cands {
		passages[i] = Passage(h.Chunk)
	}
	scores, err := r.Score(ctx, query, passages)
	if err != nil {
		return nil, fmt.Errorf("rerank with %s: %w", r.Name(), err)
	}
	if len(scores) != len(cands) {
		return nil, fmt.Errorf("rerank with %s: %d scores for %d passages", r.Name(), len(scores), len(cands))
	}
	for i, s := range scores {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("rerank with %s: passage %d scored %v", r.Name(), i+1, s)
		}
	}
	out := make([]rag.Hit, len(cands))
	for i, h := range cands {
		md := make(map[string]any, len(h.Chunk.Metadata)+2)
		maps.Copy(md, h.Chunk.Metadata)
		md[MetaRetrievalRank] = i + 1
		md[MetaRetrievalScore] = h.Score
		out[i] = h
		out[i].Chunk.Metadata = md
		out[i].Score = scores[i]
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Score > out[b].Score })
	if o.TopK > 0 && len(out) > o.TopK {
		out = out[:o.TopK]
	}
	return out, nil
}
