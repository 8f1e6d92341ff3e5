// Package ragstep holds the RAG module's workflow steps — rag-retrieve and
// rag-ingest, and the pipeline-only kinds rag-chunk, rag-embed and rag-store,
// which are errors in a workflow — and registers them with internal/step, so
// that internal/step knows no RAG code. A binary gets them by importing this
// package (internal/step/allsteps does).
package ragstep

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/source"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
	"go.yaml.in/yaml/v3"
)

// Headers of the rag steps.
const (
	// HeaderRagDocumentID names the document a rag-ingest step makes of a text
	// body, when the step sets no id.
	HeaderRagDocumentID = "HelixRagDocumentId"
)

// ragRetrieveStepShape is the rag-retrieve workflow step: a pipeline and the
// pipeline's retrieval keys, defaulting to the pipeline's own settings.
func ragRetrieveStepShape() config.Shape {
	sh := config.Shape{Type: config.TypeObject, What: "a rag-retrieve step", Short: "pipeline", Keys: []config.Key{
		{Name: "pipeline", Required: true, Shape: config.Shape{Type: config.TypeString, Description: "The id of the pipelines: entry to query."}},
	}}
	for _, k := range config.RetrieveStepShape().Keys {
		if k.Name == "candidates" || k.Name == "max_top_k" || k.Name == "max_result_bytes" || k.Name == "filter" {
			continue // properties of the pipeline (its fusion, its limits), not of one query
		}
		k.Default = nil // the pipeline's own rag-retrieve settings are the defaults
		k.Description = strings.TrimSuffix(k.Description, ".") + ". Default: the pipeline's."
		sh.Keys = append(sh.Keys, k)
	}
	return sh
}

func init() {
	// Filters written in YAML are checked when the file loads, each error at
	// the member at fault.
	config.FilterCheck = func(m map[string]any) (string, string) {
		_, err := rag.Filter(m).Parse()
		var fe *rag.FilterError
		switch {
		case err == nil:
			return "", ""
		case errors.As(err, &fe):
			return fe.Path, fe.Msg
		}
		return "filter", err.Error()
	}
	retrieveShape := ragRetrieveStepShape()
	retrieveShape.Keys = append(retrieveShape.Keys,
		config.Key{Name: "query", Shape: config.Shape{Type: config.TypeString,
			Description: "The query, with ${…} placeholders (such as ${body.question}). Default: the body (text, or {query, top_k, filter})."}},
		config.Key{Name: "filter", Shape: config.Shape{Type: config.TypeMap,
			Description: "Only chunks whose metadata has these values (a body's filter is added)."}},
		config.Key{Name: "output", Shape: config.Shape{Type: config.TypeString, What: "rag-retrieve output", Enum: config.PipelineOutputs,
			Description: "json ({query, results: [{rank, score, text, source, doc_id, chunk_id, headings, metadata}]}, the default) or text (numbered sources)."}},
	)
	step.Define(step.Kind{
		Name: "rag-retrieve",
		Description: "Queries a pipeline: the body (text, or {query, top_k, filter}) or query: is the query, and the results become the body " +
			"(json by default, or text with numbered sources). As a step of a pipeline: the pipeline's retrieval settings.",
		Shape: retrieveShape,
		Build: buildRAGRetrieve,
	})
	step.Define(step.Kind{
		Name: "rag-ingest",
		Description: "Adds the body to a pipeline's store as documents: text (its id from id: or the HelixRagDocumentId header), a JSON object " +
			"({id, text, title, source, metadata, …}), an array of them or JSON lines; each is chunked, embedded and stored, unchanged ones skipped. " +
			`The body becomes {"ingested": n, "skipped": m, "chunks": k}.`,
		Shape: config.Shape{Type: config.TypeObject, What: "a rag-ingest step", Short: "pipeline", Keys: []config.Key{
			{Name: "pipeline", Required: true, Shape: config.Shape{Type: config.TypeString, Description: "The id of the pipelines: entry to feed."}},
			{Name: "id", Shape: config.Shape{Type: config.TypeString,
				Description: "The id of a document without an id of its own, with ${…} placeholders (such as ${header.kafka.key}). Default: the HelixRagDocumentId header."}},
			{Name: "text_field", Shape: config.Shape{Type: config.TypeString, Description: "The JSON field holding the text. Default text."}},
			{Name: "source", Shape: config.Shape{Type: config.TypeString,
				Description: "What citations name as the documents' source, with ${…} placeholders. Default: the document's id."}},
			{Name: "metadata", Shape: config.Shape{Type: config.TypeMap,
				Description: "Metadata given to every document, over the document's own (such as {tenant: \"${header.Tenant}\", team: ops}): strings, numbers, booleans, lists and objects of those; ${…} placeholders are resolved per exchange, and one that is empty fails the step."}},
		}},
		Build: buildRAGIngest,
	})
	for _, kind := range []string{config.RAGChunk, config.RAGEmbed, config.RAGStore} {
		step.Define(step.Kind{
			Name:        kind,
			Description: "Only valid in the steps of a pipelines: entry (where it configures the pipeline); not a workflow step.",
			Shape:       config.Shape{Type: config.TypeAny},
			Build: func(_ *step.BuildContext, s config.StepConfig, _ *config.Decoder, _ *config.Values) (engine.Processor, error) {
				return nil, &config.Error{Pos: s.Pos, Path: s.Path,
					Msg:  fmt.Sprintf("%s is only valid in the steps of a pipelines: entry", s.Kind),
					Hint: "declare a pipeline under pipelines: with this step, then use rag-ingest (to add documents) or rag-retrieve (to query) here"}
			},
		})
	}
}

// pipelinesKey is the key under which [SetPipelines] attaches the application's
// pipelines to a build context.
type pipelinesKey struct{}

// SetPipelines gives the rag-retrieve and rag-ingest steps built with bc the
// application's pipelines: entries by id. Call it before building workflows.
func SetPipelines(bc *step.BuildContext, byID map[string]*pipeline.Pipeline) {
	bc.SetValue(pipelinesKey{}, byID)
}

func pipelines(bc *step.BuildContext) map[string]*pipeline.Pipeline {
	m, _ := bc.Value(pipelinesKey{}).(map[string]*pipeline.Pipeline)
	return m
}

// lookupPipeline finds the pipeline a rag step names, recording an error with a
// did-you-mean when there is none.
func lookupPipeline(bc *step.BuildContext, d *config.Decoder, v *config.Values) *pipeline.Pipeline {
	id := v.String("pipeline")
	if strings.TrimSpace(id) == "" {
		if v.Has("pipeline") {
			d.Errorf(v.NodeOf("pipeline"), v.PathOf("pipeline"), "pipeline must name a pipelines: entry")
		}
		return nil
	}
	byID := pipelines(bc)
	if p, ok := byID[id]; ok {
		return p
	}
	known := make([]string, 0, len(byID))
	for k := range byID {
		known = append(known, k)
	}
	sort.Strings(known)
	e := d.Errorf(v.NodeOf("pipeline"), v.PathOf("pipeline"), "no pipeline with id %q", id)
	if e.Hint = config.DidYouMean(id, known); e.Hint == "" {
		e.Hint = "declare it under pipelines:"
	}
	return nil
}

type ragRetrieve struct {
	name     string
	p        *pipeline.Pipeline
	query    string // "" means the body
	topK     int
	strategy string
	minScore *float64
	filter   map[string]any
	output   string
}

func buildRAGRetrieve(bc *step.BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	p := lookupPipeline(bc, d, v)
	st := &ragRetrieve{name: step.Name(s), p: p, query: v.String("query"), topK: v.Int("top_k"), strategy: v.String("strategy"),
		output: v.String("output")}
	if st.output == "" {
		st.output = pipeline.OutputJSON
	}
	if v.Has("min_score") {
		m := v.Float("min_score")
		st.minScore = &m
	}
	if st.query != "" {
		step.CheckPlaceholders(d, v.NodeOf("query"), v.PathOf("query"), st.query)
	}
	st.filter = config.DecodeFilter(d, v.NodeOf("filter"), v.PathOf("filter"))
	if p != nil && st.strategy == rag.StrategyVector && p.Config().Embed == nil {
		d.Errorf(v.NodeOf("strategy"), v.PathOf("strategy"), "pipeline %q has no rag-embed step: it cannot search by vector", p.ID()).Hint =
			"use strategy keyword or hybrid, or add a rag-embed step to the pipeline"
	}
	if d.Err() != nil || p == nil {
		return nil, d.Err()
	}
	return st, nil
}

func (r *ragRetrieve) Name() string { return r.name }

func (r *ragRetrieve) Process(ctx context.Context, ex *exchange.Exchange) error {
	var q pipeline.Query
	if r.query != "" {
		text, err := uri.Expand(r.query, ex)
		if err != nil {
			return fmt.Errorf("%s: query: %w", r.name, err)
		}
		q.Text = text
	} else {
		var err error
		if q, err = pipeline.QueryFromBody(ex.In().Body()); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	if r.topK > 0 && q.TopK == 0 {
		q.TopK = r.topK
	}
	if r.strategy != "" {
		q.Strategy = r.strategy
	}
	q.MinScore = r.minScore
	// The step's own filter holds whatever the body asks: the two are ANDed,
	// so a caller can narrow the step's filter and never widen or replace it.
	own, err := pipeline.ResolveFilter(r.filter, ex)
	if err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	q.Filter = rag.AndFilters(own, q.Filter)
	return r.p.Answer(ctx, ex, q, r.output)
}

type ragIngest struct {
	name      string
	p         *pipeline.Pipeline
	id        string
	textField string
	source    string
	metadata  map[string]any // nil without metadata:; values may hold placeholders
}

func buildRAGIngest(bc *step.BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	p := lookupPipeline(bc, d, v)
	st := &ragIngest{name: step.Name(s), p: p, id: v.String("id"), textField: v.String("text_field"), source: v.String("source")}
	for _, k := range []string{"id", "source"} {
		if s := v.String(k); s != "" {
			step.CheckPlaceholders(d, v.NodeOf(k), v.PathOf(k), s)
		}
	}
	if mn := v.NodeOf("metadata"); mn != nil {
		if m, ok := d.Value(mn, v.PathOf("metadata")).(map[string]any); ok {
			if _, err := pipeline.MetadataValue(m, "metadata"); err != nil {
				d.Errorf(mn, v.PathOf("metadata"), "%v", err)
			}
			checkValuePlaceholders(d, mn, v.PathOf("metadata"))
			st.metadata = m
		}
	}
	if d.Err() != nil || p == nil {
		return nil, d.Err()
	}
	return st, nil
}

func (r *ragIngest) Name() string { return r.name }

func (r *ragIngest) Process(ctx context.Context, ex *exchange.Exchange) error {
	msg := ex.In()
	id := msg.HeaderString(HeaderRagDocumentID)
	if r.id != "" {
		var err error
		if id, err = uri.Expand(r.id, ex); err != nil {
			return fmt.Errorf("%s: id: %w", r.name, err)
		}
	}
	src := ""
	if r.source != "" {
		var err error
		if src, err = uri.Expand(r.source, ex); err != nil {
			return fmt.Errorf("%s: source: %w", r.name, err)
		}
	}
	docs, err := source.FromBody(msg.Body(), source.BodyOptions{ID: id, TextField: r.textField, Source: src})
	if err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	if r.metadata != nil {
		if err := r.addMetadata(ex, docs); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	res, err := r.p.Ingest(ctx, docs)
	if err != nil {
		return fmt.Errorf("%s: %d of %d documents failed, first: %w", r.name, res.Errors, len(docs), err)
	}
	msg.SetBody(map[string]any{"ingested": res.Ingested, "skipped": res.Skipped, "chunks": res.Chunks})
	msg.SetHeader(exchange.HeaderContentType, "application/json")
	return nil
}

// addMetadata gives every document the step's metadata, its placeholders
// resolved against ex. The step's keys win over a document's own: a tenant
// taken from a header cannot be replaced by the body a sender wrote.
func (r *ragIngest) addMetadata(ex *exchange.Exchange, docs []rag.Document) error {
	v, err := pipeline.ExpandValues(r.metadata, ex, "metadata")
	if err != nil {
		return err
	}
	v, err = pipeline.MetadataValue(v, "metadata")
	if err != nil {
		return err
	}
	md := v.(map[string]any)
	for i := range docs {
		m := make(map[string]any, len(docs[i].Metadata)+len(md))
		for k, x := range docs[i].Metadata {
			m[k] = x
		}
		for k, x := range md {
			m[k] = exchange.DeepCopy(x)
		}
		docs[i].Metadata = m
	}
	return nil
}

// checkValuePlaceholders checks the ${…} placeholders of every string scalar
// under n (a filter or a metadata map), each at its own position.
func checkValuePlaceholders(d *config.Decoder, n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.ScalarNode:
		step.CheckPlaceholders(d, n, path, n.Value)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkValuePlaceholders(d, n.Content[i+1], path+"."+n.Content[i].Value)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			checkValuePlaceholders(d, c, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}
