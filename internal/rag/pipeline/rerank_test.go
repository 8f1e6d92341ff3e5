package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/pipeline/pipelinetest"
	"github.com/arvenza/helix/pkg/exchange"
)

// teiByLength is a TEI rerank server scoring a text by its length, so the
// expected order is computed; fail makes it answer 500.
func teiByLength(t *testing.T, fail *atomic.Bool, seen *atomic.Int64) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query string   `json:"query"`
			Texts []string `json:"texts"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Query == "" {
			http.Error(w, "bad request", 400)
			return
		}
		seen.Add(int64(len(req.Texts)))
		if fail.Load() {
			http.Error(w, "model not loaded", 500)
			return
		}
		out := []map[string]any{}
		for i, tx := range req.Texts {
			out = append(out, map[string]any{"index": i, "score": float64(len(tx))})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/rerank"
}

func rerankPipeline(t *testing.T, url, onError string) *pipeline.Pipeline {
	t.Helper()
	dir := t.TempDir()
	// Every document matches "coffee" once: the retrieval ties them all and
	// orders them by id (a.md, b.md …); their lengths differ.
	files := map[string]string{}
	for i, n := range []int{3, 40, 10, 25, 60, 5} {
		files[fmt.Sprintf("%c.md", 'a'+i)] = "coffee " + strings.Repeat("z", n)
	}
	writeFiles(t, dir, files)
	retries := 0
	cfg := config.PipelineConfig{ID: "docs", Source: &config.PipelineSource{Dir: dir}, Store: config.StoreConfig{Store: "embedded"},
		Retrieve: config.RetrieveConfig{Strategy: "keyword", TopK: 2, MaxTopK: 10}, Output: "json",
		Rerank: &config.RerankConfig{Provider: "http", URL: url, Format: "tei", Retries: &retries, Candidates: 4, OnError: onError}}
	p, err := pipeline.New(cfg, pipeline.Options{Parts: pipelinetest.New().Parts(), DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	startAndWait(t, p)
	t.Cleanup(func() { p.Stop(context.Background()) })
	return p
}

func TestPipelineReranksTopCandidates(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	var seen atomic.Int64
	p := rerankPipeline(t, teiByLength(t, &fail, &seen), "fail")
	ex := exchange.NewWithBody(exchange.InOut, `{"query": "coffee"}`)
	if err := p.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	var out pipeline.JSONOutput
	b, _ := json.Marshal(ex.In().Body())
	json.Unmarshal(b, &out)
	// The candidates are the retrieval's first 4 (a–d); reranked by length, the
	// best 2 (the pipeline's top_k) are answered.
	type cand struct {
		id   string
		n    int
		rank int
	}
	cands := []cand{{"a.md", 3, 1}, {"b.md", 40, 2}, {"c.md", 10, 3}, {"d.md", 25, 4}}
	sort.Slice(cands, func(i, j int) bool { return cands[i].n > cands[j].n })
	if len(out.Results) != 2 {
		t.Fatalf("%d results: %s", len(out.Results), b)
	}
	for i, r := range out.Results {
		want := cands[i]
		if r.Source != want.id || r.Score != float64(len("coffee ")+want.n) || r.Rank != i+1 {
			t.Errorf("result %d: %s score %v, want %s score %d", i, r.Source, r.Score, want.id, len("coffee ")+want.n)
		}
		if r.Metadata["retrieval_rank"] != float64(want.rank) || r.Metadata["retrieval_score"] != float64(1) {
			t.Errorf("result %d metadata %v, want retrieval_rank %d", i, r.Metadata, want.rank)
		}
	}
	if seen.Load() != 4 {
		t.Errorf("the reranker read %d passages, want the 4 candidates", seen.Load())
	}
	// A query's top_k above the candidates widens them: all 5 asked for are
	// reranked.
	hits, err := p.Query(context.Background(), pipeline.Query{Text: "coffee", TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 || hits[0].Chunk.DocID != "file:e.md" {
		t.Errorf("top 5: %d hits, first %v", len(hits), hits[0].Chunk.DocID)
	}
	if _, err := p.Query(context.Background(), pipeline.Query{Text: "coffee", TopK: 11}); err == nil || !strings.Contains(err.Error(), "max_top_k 10") {
		t.Errorf("top_k over max_top_k: %v", err)
	}
}

func TestPipelineRerankFailure(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	var seen atomic.Int64
	fail.Store(true)
	url := teiByLength(t, &fail, &seen)
	p := rerankPipeline(t, url, "fail")
	if _, err := p.Query(context.Background(), pipeline.Query{Text: "coffee"}); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("fail: err = %v", err)
	}
	// keep-order: the retrieval's order (a, b), its scores, no rerank metadata.
	p = rerankPipeline(t, url, "keep-order")
	hits, err := p.Query(context.Background(), pipeline.Query{Text: "coffee"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Chunk.DocID != "file:a.md" || hits[1].Chunk.DocID != "file:b.md" || hits[0].Score != 1 {
		t.Errorf("keep-order hits %+v", hits)
	}
	if _, ok := hits[0].Chunk.Metadata["retrieval_rank"]; ok {
		t.Error("a hit not reranked carries retrieval_rank")
	}
}

func TestPipelineRerankCutsAfterReranking(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	var seen atomic.Int64
	url := teiByLength(t, &fail, &seen)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "coffee " + strings.Repeat("a", 300), "b.md": "coffee " + strings.Repeat("b", 900)})
	cfg := config.PipelineConfig{ID: "docs", Source: &config.PipelineSource{Dir: dir}, Store: config.StoreConfig{Store: "embedded"},
		Retrieve: config.RetrieveConfig{Strategy: "keyword", TopK: 1, MaxResultBytes: 500}, Output: "json",
		Rerank: &config.RerankConfig{Provider: "http", URL: url, Format: "tei", Candidates: 4, OnError: "fail"}}
	p, err := pipeline.New(cfg, pipeline.Options{Parts: pipelinetest.New().Parts(), DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	startAndWait(t, p)
	defer p.Stop(context.Background())
	hits, err := p.Query(context.Background(), pipeline.Query{Text: "coffee"})
	if err != nil {
		t.Fatal(err)
	}
	// The reranker read b whole (907 bytes, over the bound) and put it first;
	// the answer is then cut to max_result_bytes.
	if len(hits) != 1 || hits[0].Chunk.DocID != "file:b.md" || !strings.Contains(hits[0].Chunk.Text, "[cut here") {
		t.Fatalf("hits %+v", hits)
	}
	if !bytes.Contains([]byte(hits[0].Chunk.Text), []byte("bbbb")) {
		t.Error("b's text is gone")
	}
}

func TestPipelineRerankProviderUnknown(t *testing.T) {
	t.Parallel()
	cfg := config.PipelineConfig{ID: "docs", Store: config.StoreConfig{Store: "embedded"},
		Rerank: &config.RerankConfig{Provider: "http", URL: "http://127.0.0.1:1/rerank"}}
	parts := pipelinetest.New().Parts()
	parts.Reranker = nil
	if _, err := pipeline.New(cfg, pipeline.Options{Parts: parts}); err == nil || !strings.Contains(err.Error(), "rag-rerank is not available") {
		t.Errorf("err = %v", err)
	}
}
