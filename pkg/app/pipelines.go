package app

import (
	"context"
	"fmt"
	"path/filepath"

	pipelinecomp "github.com/arvenza/helix/internal/component/pipeline"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/ragstep"
	"github.com/arvenza/helix/internal/rag/store/pgvector"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// pipelineComponent is the app's pipeline:// component.
func (a *App) pipelineComponent() *pipelinecomp.Component {
	c, _ := a.hc.Component(pipelinecomp.Scheme)
	pc, _ := c.(*pipelinecomp.Component)
	return pc
}

// preparePipelines builds the pipelines: entries (no side effects: stores open at
// Start) and declares them, before any workflow: pipeline:// targets, rag-retrieve
// and rag-ingest steps refer to them. The pipeline component starts them before
// any trigger (opening their stores, ingesting their sources in the background)
// and stops them after.
func (a *App) preparePipelines() {
	comp := a.pipelineComponent()
	ids := make([]string, 0, len(a.cfg.Pipelines))
	for _, p := range a.cfg.Pipelines {
		ids = append(ids, p.ID)
	}
	if comp != nil {
		comp.Declare(ids...)
	}
	a.pipelineByID = map[string]*pipeline.Pipeline{}
	stores := map[string]string{} // store location → the pipeline using it
	for _, pc := range a.cfg.Pipelines {
		where := "embedded store " + filepath.Clean(pc.StorePath(a.cfg.Helix.DataDir))
		if pc.Store.Store == "pgvector" {
			table := pc.Store.Table
			if table == "" {
				table = pgvector.TableName(pc.ID)
			}
			where = "pgvector table " + table + " of " + orDefault(pc.Store.DSN, "DATABASE_URL")
		}
		if other, dup := stores[where]; dup {
			a.errs = append(a.errs, &config.Error{Pos: pc.Store.Pos, Path: pc.Path,
				Msg:  fmt.Sprintf("pipeline %q uses the %s, like pipeline %q", pc.ID, where, other),
				Hint: "two pipelines cannot share a store: give each its own path (embedded) or table (pgvector)"})
			continue
		}
		stores[where] = pc.ID
		p, err := pipeline.New(pc, pipeline.Options{Logger: a.logger, DataDir: a.cfg.Helix.DataDir, Parts: a.opts.RAGParts})
		if err != nil {
			a.errs = append(a.errs, config.AsErrors(err, pc.Pos, pc.Path)...)
			continue
		}
		a.pipelines = append(a.pipelines, p)
		a.pipelineByID[pc.ID] = p
		if comp != nil {
			comp.AddService(p)
		}
	}
	ragstep.SetPipelines(a.bc, a.pipelineByID)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// buildPipelineWorkflows makes each pipeline an engine workflow (Kind pipeline)
// triggered by pipeline://id, whose one processor queries it: MCP exposure, expose
// lists, per-workflow metrics and the manifest treat pipelines like every other
// workflow.
func (a *App) buildPipelineWorkflows() []*engine.Workflow {
	validate, err := newValidator(pipeline.InputSchema)
	if err != nil {
		panic(err) // a constant schema
	}
	out := make([]*engine.Workflow, 0, len(a.pipelines))
	for _, p := range a.pipelines {
		pc := p.Config()
		desc := pc.Description
		if desc == "" {
			desc = "Search the documents of " + pc.ID + ": returns the passages that best match the query"
			if pc.Output != pipeline.OutputJSON {
				desc += ", numbered, with their sources, to cite"
			}
		}
		out = append(out, &engine.Workflow{ID: pc.ID, Description: desc, FromURI: pipelinecomp.Scheme + "://" + pc.ID,
			Kind: engine.KindPipeline, Source: pc.Pos.String(), InputSchema: pipeline.InputSchema, ValidateInput: validate,
			Processors: []engine.Processor{namedProcessor{name: "pipeline " + pc.ID, p: processorOf(p)}}})
	}
	return out
}

func processorOf(p *pipeline.Pipeline) engine.Processor {
	return engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error { return p.Process(ctx, ex) })
}

// Pipeline returns the running pipeline id (for the CLI's rag commands and tests).
func (a *App) Pipeline(id string) (*pipeline.Pipeline, bool) {
	p, ok := a.pipelineByID[id]
	return p, ok
}

// Pipelines returns the app's pipelines in declaration order.
func (a *App) Pipelines() []*pipeline.Pipeline {
	return append([]*pipeline.Pipeline(nil), a.pipelines...)
}

// manifestPipelines describes the pipelines: entries for the manifest (never a
// key or a DSN).
func (a *App) manifestPipelines() []management.Pipeline {
	out := make([]management.Pipeline, 0, len(a.pipelines))
	for _, p := range a.pipelines {
		pc := p.Config()
		m := management.Pipeline{ID: pc.ID, Store: pc.Store.Store, Retrieval: pc.Retrieve.Strategy, Output: pc.Output,
			Chunking: pc.Chunk.Strategy}
		if pc.Source != nil {
			m.Source = "file://" + pc.Source.Dir
		}
		if e := pc.Embed; e != nil {
			m.Embedder = e.Provider
			m.Model = e.Model
		}
		if m.Embedder == "" && pc.Retrieve.Strategy == "hybrid" {
			m.Retrieval = "keyword"
		}
		pr := p.Progress()
		m.Ingest = management.PipelineIngest{Running: pr.Running, Done: pr.Done, Documents: pr.Seen, Ingested: pr.Ingested,
			Skipped: pr.Skipped, Deleted: pr.Deleted, Errors: pr.Errors}
		out = append(out, m)
	}
	return out
}

// pipelineMetrics are the per-pipeline counters of /metrics.
func (a *App) pipelineMetrics() []management.PipelineMetrics {
	out := make([]management.PipelineMetrics, 0, len(a.pipelines))
	for _, p := range a.pipelines {
		st := p.Stats()
		out = append(out, management.PipelineMetrics{Pipeline: p.ID(), DocumentsIngested: st.DocumentsIngested,
			IngestErrors: st.IngestErrors, Queries: st.Queries, QueryErrors: st.QueryErrors, Chunks: st.Chunks})
	}
	return out
}
