package ragstep

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/rerank"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// The rag-rerank workflow step reorders what a rag-retrieve step (json output)
// put in the body: {query, results: [{rank, score, text, source, doc_id,
// chunk_id, headings, metadata}]}. Its reranker is the pipeline step's (one
// shape, one decoder: config.RerankStepShape), plus the keys of a step that
// reads and writes a body.

func rerankStepShape() config.Shape {
	sh := config.RerankStepShape()
	sh.What = "a rag-rerank step"
	sh.Description = "Reorders the results of a rag-retrieve step (its json output, in the body) with a reranker: onnx (a local cross-encoder) or http (a rerank endpoint). " +
		"A result's score becomes the reranker's; its retrieval rank and score go into its metadata (retrieval_rank, retrieval_score)."
	sh.Keys = append(slices.Clone(sh.Keys),
		config.Key{Name: "top_k", Shape: config.Shape{Type: config.TypeInt, Min: config.Bound(1), Default: rag.DefaultTopK,
			Description: "How many reranked results are kept."}},
		config.Key{Name: "query", Shape: config.Shape{Type: config.TypeString,
			Description: "The query, with ${…} placeholders (such as ${body.question}). Default: the body's query (what rag-retrieve searched for)."}},
		config.Key{Name: "output", Shape: config.Shape{Type: config.TypeString, What: "rag-rerank output", Enum: config.PipelineOutputs,
			Description: "json (the same shape as rag-retrieve's, the default) or text (numbered sources)."}},
	)
	return sh
}

func init() {
	step.Define(step.Kind{
		Name: config.RAGRerank,
		Description: "Reorders a rag-retrieve step's json results (the body) with a reranker (onnx or http): the best top_k of the first candidates, " +
			"scored by the reranker, the retrieval's rank and score kept in each result's metadata. In a pipeline: reranks the pipeline's queries.",
		Shape: rerankStepShape(),
		Build: buildRAGRerank,
	})
}

type ragRerank struct {
	name   string
	cfg    config.RerankConfig
	query  string // "" means the body's
	output string
}

func buildRAGRerank(_ *step.BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	rc := config.RerankFromValues(d, v, s.Node, s.Path)
	rc.TopK = v.Int("top_k")
	if rc.TopK > rc.Candidates {
		d.Errorf(v.NodeOf("top_k"), v.PathOf("top_k"), "top_k %d is more than candidates %d: only the candidates are reranked", rc.TopK, rc.Candidates).Hint =
			"raise candidates, or lower top_k"
	}
	if rc.Provider != "" {
		if err := rerank.Available(rc.Provider); err != nil {
			d.Errorf(v.NodeOf("provider"), v.PathOf("provider"), "rag-rerank provider %v", err)
		}
	}
	st := &ragRerank{name: step.Name(s), cfg: *rc, query: v.String("query"), output: v.String("output")}
	if st.output == "" {
		st.output = pipeline.OutputJSON
	}
	if st.query != "" {
		step.CheckPlaceholders(d, v.NodeOf("query"), v.PathOf("query"), st.query)
	}
	if d.Err() != nil {
		return nil, d.Err()
	}
	return st, nil
}

func (r *ragRerank) Name() string { return r.name }

func (r *ragRerank) Process(ctx context.Context, ex *exchange.Exchange) error {
	msg := ex.In()
	query, hits, err := resultsFromBody(msg.Body())
	if err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	if r.query != "" {
		if query, err = uri.Expand(r.query, ex); err != nil {
			return fmt.Errorf("%s: query: %w", r.name, err)
		}
	}
	if strings.TrimSpace(query) == "" {
		return fmt.Errorf("%s: the query is empty: send rag-retrieve's json output (it has the query) or set the step's query", r.name)
	}
	if len(hits) > 0 {
		reranked, err := r.rerank(ctx, query, hits)
		if err != nil {
			if r.cfg.OnError != rerank.OnErrorKeepOrder || ctx.Err() != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			slog.WarnContext(ctx, "rag-rerank failed: keeping the retrieval's order (on_error: keep-order)", "step", r.name, "err", err)
			reranked = hits[:min(len(hits), r.cfg.TopK)]
		}
		hits = reranked
	}
	msg.SetHeader(pipeline.HeaderHits, len(hits))
	if r.output == pipeline.OutputJSON {
		b, err := json.Marshal(pipeline.ToJSON(query, hits))
		if err != nil {
			return err
		}
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		msg.SetBody(v)
		msg.SetHeader(exchange.HeaderContentType, "application/json")
		return nil
	}
	msg.SetBody(pipeline.Text(query, hits))
	msg.SetHeader(exchange.HeaderContentType, "text/plain; charset=utf-8")
	return nil
}

func (r *ragRerank) rerank(ctx context.Context, query string, hits []rag.Hit) ([]rag.Hit, error) {
	rr, err := rerank.Shared(ctx, r.cfg)
	if err != nil {
		return nil, err
	}
	return rerank.Apply(ctx, rr, query, hits, rerank.Options{Candidates: r.cfg.Candidates, TopK: r.cfg.TopK})
}

// resultsFromBody reads rag-retrieve's json output back into hits, in its
// order.
func resultsFromBody(body any) (string, []rag.Hit, error) {
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	case json.RawMessage:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return "", nil, fmt.Errorf("the body is not rag-retrieve's json output: %v", err)
		}
	}
	var out struct {
		Query   string                 `json:"query"`
		Results *[]pipeline.JSONResult `json:"results"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Results == nil {
		return "", nil, fmt.Errorf(`the body is not rag-retrieve's json output ({query, results: [...]}): put rag-rerank after a rag-retrieve step with output: json (its default)`)
	}
	hits := make([]rag.Hit, 0, len(*out.Results))
	for i, res := range *out.Results {
		if res.ChunkID == "" && res.Text == "" {
			return "", nil, fmt.Errorf("result %d has neither text nor chunk_id: not rag-retrieve's output", i+1)
		}
		c := rag.Chunk{ID: res.ChunkID, DocID: res.DocID, Text: res.Text, Headings: res.Headings, Metadata: res.Metadata}
		if t, ok := res.Metadata["title"].(string); ok {
			c.Title = t
		}
		if c.Metadata == nil {
			c.Metadata = map[string]any{}
		}
		if _, ok := c.Metadata["source"]; !ok && res.Source != "" {
			c.Metadata["source"] = res.Source // so that the citation stays
		}
		hits = append(hits, rag.Hit{Chunk: c, Score: res.Score})
	}
	return out.Query, hits, nil
}
