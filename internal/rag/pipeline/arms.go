package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/arvenza/helix/internal/rag"
)

// Arms runs the pipeline's retrieval for text taken apart into its keyword,
// vector and fused rankings (see [rag.RetrieveArms]), with the pipeline's
// rag-retrieve settings: its candidates, max_top_k and max_result_bytes, and
// its min_score when its strategy is hybrid (the one scale the fused ranking
// has). f is ANDed with the pipeline's own filter, which applies as to every
// query (one that needs an exchange's placeholders fails here). It reads only:
// it is not counted as a query in the pipeline's metrics.
func (p *Pipeline) Arms(ctx context.Context, text string, topK int, f rag.Filter) (rag.Arms, error) {
	if strings.TrimSpace(text) == "" {
		return rag.Arms{}, errors.New("the query is empty")
	}
	st, emb, _, err := p.parts3()
	if err != nil {
		return rag.Arms{}, err
	}
	r := p.cfg.Retrieve
	own, err := ResolveFilter(r.Filter, nil)
	if err != nil {
		return rag.Arms{}, fmt.Errorf("pipeline %s: %w", p.cfg.ID, err)
	}
	q := rag.Query{Text: text, TopK: r.TopK, Candidates: r.Candidates, MaxTopK: r.MaxTopK, MaxBytes: r.MaxResultBytes,
		Filter: rag.AndFilters(own, f)}
	if r.Strategy == "" || r.Strategy == rag.StrategyHybrid {
		q.MinScore = r.MinScore
	}
	if topK > 0 {
		q.TopK = topK
	}
	arms, err := rag.RetrieveArms(ctx, st, emb, q)
	if err != nil {
		return rag.Arms{}, fmt.Errorf("pipeline %s: %w", p.cfg.ID, err)
	}
	return arms, nil
}

// StoreStats counts what the pipeline's store holds now.
func (p *Pipeline) StoreStats(ctx context.Context) (rag.Stats, error) {
	st, _, _, err := p.parts3()
	if err != nil {
		return rag.Stats{}, err
	}
	return st.Stats(ctx)
}
