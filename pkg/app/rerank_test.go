package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag/pipeline/pipelinetest"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// rerankByLength is a Cohere-format rerank endpoint scoring a passage by its
// length, so the expected order is computed from the documents.
func rerankByLength(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query     string   `json:"query"`
			Documents []string `json:"documents"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil || req.Query == "" {
			http.Error(w, "bad request", 400)
			return
		}
		var res []map[string]any
		for i, d := range req.Documents {
			res = append(res, map[string]any{"index": i, "relevance_score": float64(len(d))})
		}
		json.NewEncoder(w).Encode(map[string]any{"results": res})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/rerank"
}

// rag-rerank after rag-retrieve in a workflow, and as the last step of a
// pipeline queried through pipeline://: both answer the reranker's order.
func TestRerankInWorkflowAndPipeline(t *testing.T) {
	t.Parallel()
	kit := pipelinetest.New()
	opts := quiet
	opts.RAGParts = kit.Parts()
	url := rerankByLength(t)
	a := buildStart(t, `
pipelines:
  - id: kb
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 1}
  - id: kb-reranked
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 1}
      - rag-rerank: {provider: http, url: "`+url+`", candidates: 10}
    output: json
workflows:
  - id: add
    trigger: direct://add
    steps:
      - rag-ingest: {pipeline: kb}
  - id: add2
    trigger: direct://add2
    steps:
      - rag-ingest: {pipeline: kb-reranked}
  - id: ask
    trigger: direct://ask
    steps:
      - rag-retrieve: {pipeline: kb, top_k: 10}
      - rag-rerank: {provider: http, url: "`+url+`", top_k: 2, candidates: 10}
  - id: ask-text
    trigger: direct://ask-text
    steps:
      - rag-retrieve: {pipeline: kb, top_k: 10}
      - rag-rerank: {provider: http, url: "`+url+`", top_k: 1, query: "${body.query} please", output: text}
  - id: ask-pipeline
    trigger: direct://ask-pipeline
    steps:
      - target: pipeline://kb-reranked
`, opts)
	ctx := callCtx(t)
	send := func(uri string, body any) *exchange.Exchange {
		t.Helper()
		ex := exchange.NewWithBody(exchange.InOut, body)
		if err := a.Context().Send(ctx, uri, ex); err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		return ex
	}
	docs := []map[string]any{
		{"id": "short", "text": "printer jam"},
		{"id": "longest", "text": "the printer on floor three is out of toner and jams on every page"},
		{"id": "medium", "text": "printer needs a new drum unit"},
	}
	send("direct://add", docs)
	send("direct://add2", docs)

	var out struct {
		Query   string `json:"query"`
		Results []struct {
			Rank     int            `json:"rank"`
			Score    float64        `json:"score"`
			DocID    string         `json:"doc_id"`
			Metadata map[string]any `json:"metadata"`
		} `json:"results"`
	}
	b, _ := json.Marshal(send("direct://ask", map[string]any{"query": "printer"}).In().Body())
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	// Retrieval ties them (one matching word each): reranked by length.
	if len(out.Results) != 2 || out.Results[0].DocID != "longest" || out.Results[1].DocID != "medium" || out.Query != "printer" {
		t.Fatalf("reranked = %s", b)
	}
	if out.Results[0].Score != float64(len(docs[1]["text"].(string))) || out.Results[0].Metadata["retrieval_rank"] == nil ||
		out.Results[0].Metadata["retrieval_score"] == nil {
		t.Errorf("result 1 = %+v", out.Results[0])
	}

	if got := exchange.Stringify(send("direct://ask-text", map[string]any{"query": "printer"}).In().Body()); !strings.HasPrefix(got, "[1] longest\nthe printer on floor three") {
		t.Errorf("text output:\n%s", got)
	}

	b, _ = json.Marshal(send("direct://ask-pipeline", "printer").In().Body())
	out.Results = nil
	json.Unmarshal(b, &out)
	if len(out.Results) != 1 || out.Results[0].DocID != "longest" {
		t.Errorf("pipeline with rag-rerank = %s", b)
	}

	// A body that is not rag-retrieve's json output is an error that says so.
	ex := exchange.NewWithBody(exchange.InOut, "printer")
	a2 := buildStart(t, `
pipelines:
  - id: kb
workflows:
  - id: bad
    trigger: direct://bad
    steps:
      - rag-rerank: {provider: http, url: "`+url+`"}
`, opts)
	if err := a2.Context().Send(ctx, "direct://bad", ex); err == nil || !strings.Contains(err.Error(), "not rag-retrieve's json output") {
		t.Errorf("text body: %v", err)
	}
}

func TestRerankStepBuildErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"top_k over candidates", `
workflows:
  - id: w
    trigger: direct://w
    steps:
      - rag-rerank: {provider: http, url: "http://127.0.0.1:1/rerank", candidates: 5, top_k: 8}
`, "helix.yaml:6:94: workflows[0].steps[0].top_k: top_k 8 is more than candidates 5"},
		{"no url", `
workflows:
  - id: w
    trigger: direct://w
    steps:
      - rag-rerank: {provider: http}
`, "provider http needs url"},
		{"format typo", `
workflows:
  - id: w
    trigger: direct://w
    steps:
      - rag-rerank: {provider: http, url: "http://x/rerank", format: cohre}
`, `unknown rerank format "cohre" (did you mean "cohere"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.LoadBytes("helix.yaml", []byte(tc.yaml))
			if err == nil {
				_, err = app.Build(cfg, quiet)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A reranker that fails fails the step (on_error: fail, the default), or
// leaves the retrieval's order (keep-order).
func TestRerankStepOnError(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "model not loaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	kit := pipelinetest.New()
	opts := quiet
	opts.RAGParts = kit.Parts()
	a := buildStart(t, `
pipelines:
  - id: kb
workflows:
  - id: add
    trigger: direct://add
    steps:
      - rag-ingest: {pipeline: kb}
  - id: strict
    trigger: direct://strict
    steps:
      - rag-retrieve: {pipeline: kb, top_k: 10}
      - rag-rerank: {provider: http, url: "`+down.URL+`/rerank", retries: 0}
  - id: lenient
    trigger: direct://lenient
    steps:
      - rag-retrieve: {pipeline: kb, top_k: 10}
      - rag-rerank: {provider: http, url: "`+down.URL+`/rerank", retries: 0, on_error: keep-order, top_k: 2}
`, opts)
	ctx := callCtx(t)
	ex := exchange.NewWithBody(exchange.InOut, []map[string]any{{"id": "a", "text": "printer jam"}, {"id": "b", "text": "printer on fire today"},
		{"id": "c", "text": "printer toner"}})
	if err := a.Context().Send(ctx, "direct://add", ex); err != nil {
		t.Fatal(err)
	}
	ex = exchange.NewWithBody(exchange.InOut, map[string]any{"query": "printer"})
	if err := a.Context().Send(ctx, "direct://strict", ex); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("strict: err = %v", err)
	}
	lenient := exchange.NewWithBody(exchange.InOut, map[string]any{"query": "printer"})
	if err := a.Context().Send(ctx, "direct://lenient", lenient); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Results []struct {
			DocID    string         `json:"doc_id"`
			Metadata map[string]any `json:"metadata"`
		} `json:"results"`
	}
	b, _ := json.Marshal(lenient.In().Body())
	json.Unmarshal(b, &out)
	// The store ties the three and orders them by id: a, b kept, no rerank marks.
	if len(out.Results) != 2 || out.Results[0].DocID != "a" || out.Results[1].DocID != "b" || out.Results[0].Metadata["retrieval_rank"] != nil {
		t.Errorf("keep-order = %s", b)
	}
}
