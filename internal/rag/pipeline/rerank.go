package pipeline

import (
	"context"
	"fmt"
	"math"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/rerank"
)

// A pipeline's rag-rerank step: its queries retrieve the top candidates, the
// reranker reorders them and the query's top_k of them are answered.

// checkRerank reports a rag-rerank step this build or these parts cannot run.
func checkRerank(cfg config.PipelineConfig, parts Parts, defaultParts bool) config.Errors {
	if cfg.Rerank == nil {
		return nil
	}
	if parts.Reranker == nil {
		return config.Errors{&config.Error{Pos: cfg.Rerank.Pos, Msg: fmt.Sprintf("pipeline %q: rag-rerank is not available in this build", cfg.ID)}}
	}
	if defaultParts {
		if err := rerank.Available(cfg.Rerank.Provider); err != nil { // left out of this build
			return config.Errors{&config.Error{Pos: cfg.Rerank.Pos, Msg: fmt.Sprintf("pipeline %q: rag-rerank provider %v", cfg.ID, err)}}
		}
	}
	return nil
}

func (p *Pipeline) openReranker(ctx context.Context) (rerank.Reranker, error) {
	if p.cfg.Rerank == nil {
		return nil, nil
	}
	rr, err := p.parts.Reranker(ctx, *p.cfg.Rerank)
	if err != nil {
		return nil, fmt.Errorf("pipeline %s: rag-rerank: %w", p.cfg.ID, err)
	}
	return rr, nil
}

// retrieveReranked retrieves max(candidates, top_k) hits whole (the reranker
// reads whole passages), reranks them and bounds the best top_k to the
// pipeline's max_result_bytes. With on_error keep-order a failed reranker
// leaves the retrieval's order, logged.
func (p *Pipeline) retrieveReranked(ctx context.Context, st rag.Store, emb rag.Embedder, rr rerank.Reranker, rq rag.Query) ([]rag.Hit, error) {
	topK, maxTopK := rq.TopK, rq.MaxTopK
	if topK <= 0 {
		topK = rag.DefaultTopK
	}
	if maxTopK <= 0 {
		maxTopK = rag.DefaultMaxTopK
	}
	if topK > maxTopK {
		return nil, fmt.Errorf("top_k %d is more than this pipeline returns (max_top_k %d): ask for at most %d passages", topK, maxTopK, maxTopK)
	}
	n := max(p.cfg.Rerank.Candidates, topK)
	wide := rq
	wide.TopK, wide.MaxTopK, wide.MaxBytes = n, n, math.MaxInt
	hits, err := rag.Retrieve(ctx, st, emb, wide)
	if err != nil {
		return nil, err
	}
	reranked, err := rerank.Apply(ctx, rr, rq.Text, hits, rerank.Options{Candidates: n, TopK: topK})
	if err != nil {
		if p.cfg.Rerank.OnError != rerank.OnErrorKeepOrder || ctx.Err() != nil {
			return nil, err
		}
		p.logger.Warn("rag-rerank failed: answering in the retrieval's order (on_error: keep-order)", "err", err)
		reranked = hits[:min(len(hits), topK)]
	}
	return rag.BoundBytes(reranked, rq.MaxBytes)
}
