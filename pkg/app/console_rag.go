package app

import (
	"context"
	"fmt"

	"github.com/arvenza/helix/internal/console/ragpage"
	"github.com/arvenza/helix/internal/rag"
)

// The console's RAG page (internal/console/ragpage) reads the app's pipelines.
func init() {
	registerConsolePart(consolePart{Name: "rag", Setup: func(a *App) (consoleSetup, error) {
		p := ragpage.New(ragSource{a})
		return consoleSetup{Page: &p}, nil
	}})
}

// ragSource is the app as the RAG page sees it.
type ragSource struct{ a *App }

// Pipelines describes the app's pipelines: the store's kind and the
// embedder's provider and model, never a key, a URL or a DSN.
func (s ragSource) Pipelines(context.Context) []ragpage.Pipeline {
	out := make([]ragpage.Pipeline, 0, len(s.a.pipelines))
	for _, p := range s.a.pipelines {
		cfg := p.Config()
		st := p.Stats()
		row := ragpage.Pipeline{ID: cfg.ID, Description: cfg.Description, Store: cfg.Store.Store,
			Strategy: cfg.Retrieve.Strategy, Ingested: st.DocumentsIngested, IngestErrors: st.IngestErrors,
			Queries: st.Queries, QueryErrors: st.QueryErrors}
		if row.Store == "" {
			row.Store = "embedded"
		}
		if row.Strategy == "" {
			row.Strategy = rag.StrategyHybrid
		}
		if cfg.Embed != nil {
			row.Embedder = cfg.Embed.Provider
			if cfg.Embed.Model != "" {
				row.Embedder += " " + cfg.Embed.Model
			}
		} else if row.Strategy == rag.StrategyHybrid {
			row.Strategy = rag.StrategyKeyword // hybrid falls back to keyword without an embedder
		}
		out = append(out, row)
	}
	return out
}

func (s ragSource) Count(ctx context.Context, id string) (rag.Stats, error) {
	p, ok := s.a.pipelineByID[id]
	if !ok {
		return rag.Stats{}, fmt.Errorf("no pipeline %q", id)
	}
	return p.StoreStats(ctx)
}

func (s ragSource) Arms(ctx context.Context, id, query string, k int, f rag.Filter) (rag.Arms, bool, error) {
	p, ok := s.a.pipelineByID[id]
	if !ok {
		return rag.Arms{}, false, nil
	}
	arms, err := p.Arms(ctx, query, k, f)
	return arms, true, err
}
