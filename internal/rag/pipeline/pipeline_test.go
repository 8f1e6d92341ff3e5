package pipeline_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/pipeline/pipelinetest"
	"github.com/arvenza/helix/pkg/exchange"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if text == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newPipeline(t *testing.T, kit *pipelinetest.Kit, dir string, embed bool) *pipeline.Pipeline {
	return newPipelineIn(t, kit, dir, "data", embed)
}

func newPipelineIn(t *testing.T, kit *pipelinetest.Kit, dir, dataDir string, embed bool) *pipeline.Pipeline {
	t.Helper()
	cfg := config.PipelineConfig{ID: "docs", Source: &config.PipelineSource{Dir: dir},
		Store: config.StoreConfig{Store: "embedded"}, Retrieve: config.RetrieveConfig{Strategy: "hybrid", TopK: 3}, Output: "text"}
	if embed {
		cfg.Embed = &config.EmbedConfig{Provider: "openai"}
	}
	p, err := pipeline.New(cfg, pipeline.Options{Parts: kit.Parts(), DataDir: dataDir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func startAndWait(t *testing.T, p *pipeline.Pipeline) {
	t.Helper()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.IngestDone():
	case <-time.After(5 * time.Second):
		t.Fatal("ingest did not finish")
	}
}

func TestIncrementalIngest(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.md":     "# Install\n\nRun the installer on Linux.\n\nThen reboot.",
		"b.md":     "# Billing\n\nInvoices are sent monthly.",
		"sub/c.md": "Kafka consumers commit offsets.",
	})
	kit := pipelinetest.New()
	p := newPipeline(t, kit, dir, true)
	startAndWait(t, p)
	if got := p.Progress(); !got.Done || got.Seen != 3 || got.Ingested != 3 || got.Chunks != 4 {
		t.Errorf("first ingest = %+v", got)
	}
	firstEmbeds := kit.EmbedCalls.Load()
	if firstEmbeds != 4 {
		t.Errorf("embedded %d chunks, want 4", firstEmbeds)
	}
	// A rag-ingest document joins the same store.
	if res, err := p.Ingest(context.Background(), []rag.Document{{ID: "ticket-7", Source: "kafka://tickets", Text: "The printer is on fire."}}); err != nil || res.Ingested != 1 {
		t.Fatalf("Ingest = %+v, %v", res, err)
	}
	firstEmbeds = kit.EmbedCalls.Load()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Change a, delete b, keep c; restart on the same store.
	writeFiles(t, dir, map[string]string{"a.md": "# Install\n\nRun the new installer on Linux.", "b.md": ""})
	p = newPipeline(t, kit, dir, true)
	startAndWait(t, p)
	got := p.Progress()
	if got.Seen != 2 || got.Ingested != 1 || got.Skipped != 1 || got.Deleted != 1 || got.Errors != 0 {
		t.Errorf("second ingest = %+v", got.Result)
	}
	if n := kit.EmbedCalls.Load() - firstEmbeds; n != 1 {
		t.Errorf("re-ingest embedded %d chunks, want 1 (only the changed file)", n)
	}
	docs, _ := mustStore(t, kit, p).Documents(context.Background())
	if _, ok := docs["file:b.md"]; ok {
		t.Error("the deleted file is still stored")
	}
	if _, ok := docs["ticket-7"]; !ok {
		t.Error("the re-scan deleted a rag-ingest document")
	}
	hits, err := p.Query(context.Background(), pipeline.Query{Text: "printer fire"})
	if err != nil || len(hits) == 0 || hits[0].Chunk.DocID != "ticket-7" {
		t.Fatalf("query = %+v, %v", hits, err)
	}
	if st := p.Stats(); st.Queries != 1 || st.DocumentsIngested != 1 || st.Chunks != 3 {
		t.Errorf("stats = %+v", st)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !mustStore(t, kit, p).Closed() {
		t.Error("Stop did not close the store")
	}
}

func mustStore(t *testing.T, kit *pipelinetest.Kit, p *pipeline.Pipeline) *pipelinetest.Store {
	t.Helper()
	s := kit.Store(p.Config().StorePath("data"))
	if s == nil {
		t.Fatal("no store")
	}
	return s
}

func TestOutputs(t *testing.T) {
	hits := []rag.Hit{
		{Chunk: rag.Chunk{ID: "file:a.md#0", DocID: "file:a.md", Text: "Run the installer.\n", Headings: []string{"Guide", "Install"}, Metadata: map[string]any{"source": "a.md"}}, Score: 2},
		{Chunk: rag.Chunk{ID: "t#0", DocID: "t", Text: "Reboot."}, Score: 1},
	}
	want := "[1] a.md (Guide > Install)\nRun the installer.\n\n[2] t\nReboot.\n"
	if got := pipeline.Text("install", hits); got != want {
		t.Errorf("text:\n%q\nwant\n%q", got, want)
	}
	b, ct, err := pipeline.Format("json", "install", hits)
	if err != nil || ct != "application/json" {
		t.Fatal(ct, err)
	}
	var out struct {
		Query   string
		Results []map[string]any
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Query != "install" || len(out.Results) != 2 || out.Results[0]["rank"] != 1.0 || out.Results[0]["source"] != "a.md" ||
		out.Results[1]["chunk_id"] != "t#0" || out.Results[0]["doc_id"] != "file:a.md" {
		t.Errorf("json = %s", b)
	}
	if got := pipeline.Text("x", nil); !strings.Contains(got, "No documents") {
		t.Errorf("empty = %q", got)
	}
}

func TestQueryBeforeStartAndEmpty(t *testing.T) {
	p := newPipeline(t, pipelinetest.New(), t.TempDir(), false)
	if _, err := p.Query(context.Background(), pipeline.Query{Text: "x"}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("err = %v", err)
	}
	startAndWait(t, p)
	defer p.Stop(context.Background())
	if _, err := p.Query(context.Background(), pipeline.Query{Text: "  "}); err == nil {
		t.Error("an empty query was accepted")
	}
	if _, err := p.Query(context.Background(), pipeline.Query{Text: "x", Strategy: "vector"}); err == nil || !strings.Contains(err.Error(), "rag-embed") {
		t.Errorf("vector without embedder: %v", err)
	}
}

func TestIngestRejectsReservedIDs(t *testing.T) {
	p := newPipeline(t, pipelinetest.New(), t.TempDir(), false)
	startAndWait(t, p)
	defer p.Stop(context.Background())
	res, err := p.Ingest(context.Background(), []rag.Document{{ID: "file:x", Text: "a"}, {ID: "ok", Text: "b"}})
	if err == nil || res.Errors != 1 || res.Ingested != 1 {
		t.Errorf("Ingest = %+v, %v", res, err)
	}
}

// blockingSource blocks in Walk until its context ends.
type blockingSource struct{ entered chan struct{} }

func (b blockingSource) Walk(ctx context.Context, fn func(rag.Document) error) error {
	if err := fn(rag.Document{ID: "one", Text: "first document"}); err != nil {
		return err
	}
	close(b.entered)
	<-ctx.Done()
	return ctx.Err()
}

func TestStopCancelsIngest(t *testing.T) {
	kit := pipelinetest.New()
	parts := kit.Parts()
	src := blockingSource{entered: make(chan struct{})}
	parts.Source = func(config.PipelineSource, *slog.Logger) (pipeline.Source, error) { return src, nil }
	cfg := config.PipelineConfig{ID: "slow", Source: &config.PipelineSource{Dir: "x"}, Store: config.StoreConfig{Store: "embedded"}}
	p, err := pipeline.New(cfg, pipeline.Options{Parts: parts, DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-src.entered
	// Serving goes on during ingest, and sees what is stored so far.
	deadline := time.Now().Add(5 * time.Second)
	for {
		hits, err := p.Query(context.Background(), pipeline.Query{Text: "first document", Strategy: "keyword"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first document never became visible")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.IngestDone():
	default:
		t.Error("ingest still running after Stop")
	}
}

func TestMissingPartsAreBuildErrors(t *testing.T) {
	cfg := config.PipelineConfig{ID: "p", Source: &config.PipelineSource{Dir: "x"}, Embed: &config.EmbedConfig{Provider: "onnx"}}
	_, err := pipeline.New(cfg, pipeline.Options{Parts: &pipeline.Parts{}})
	if err == nil || !strings.Contains(err.Error(), "not available in this build") {
		t.Errorf("err = %v", err)
	}
}

// Helix's own parts: a directory of Markdown, the embedded store, no embedder.
func TestDefaultPartsKeywordOnly(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{
		"install.md": "# Install\n\n## Linux\n\nDownload the tarball and run ./install.sh as root.\n",
		"billing.md": "# Billing\n\nInvoices are emailed on the first day of each month.\n",
	})
	cfg := config.PipelineConfig{ID: "docs", Source: &config.PipelineSource{Dir: dir},
		Chunk: config.ChunkConfig{Strategy: "recursive", Size: 512, Overlap: 64, Unit: "tokens"},
		Store: config.StoreConfig{Store: "embedded"}, Retrieve: config.RetrieveConfig{Strategy: "hybrid", TopK: 5}, Output: "text"}
	p, err := pipeline.New(cfg, pipeline.Options{DataDir: data, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	startAndWait(t, p)
	hits, err := p.Query(context.Background(), pipeline.Query{Text: "how do I install on linux"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("hits %v, err %v", hits, err)
	}
	text := pipeline.Text("install", hits)
	if !strings.HasPrefix(text, "[1] install.md (Install)\n") || !strings.Contains(text, "install.sh") {
		t.Errorf("text:\n%s", text)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "rag", "docs")); err != nil {
		t.Errorf("store dir: %v", err)
	}
}

// A pipeline's rag-retrieve max_top_k and max_result_bytes bound every query.
func TestQueryLimits(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.md": "# A\n\n" + strings.Repeat("install linux words ", 200),
		"b.md": "# B\n\n" + strings.Repeat("install windows words ", 200),
	})
	cfg := config.PipelineConfig{ID: "docs", Source: &config.PipelineSource{Dir: dir},
		Chunk: config.ChunkConfig{Strategy: "recursive", Size: 4096, Unit: "characters"},
		Store: config.StoreConfig{Store: "embedded"}, Retrieve: config.RetrieveConfig{Strategy: "keyword", TopK: 5, MaxTopK: 7, MaxResultBytes: 1000}, Output: "json"}
	p, err := pipeline.New(cfg, pipeline.Options{DataDir: data, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	startAndWait(t, p)
	defer p.Stop(context.Background())
	for _, n := range []int{8, 1_000_000} {
		if _, err := p.Query(context.Background(), pipeline.Query{Text: "install", TopK: n}); err == nil || !strings.Contains(err.Error(), "max_top_k 7") {
			t.Errorf("top_k %d: %v", n, err)
		}
	}
	ex := exchange.NewWithBody(exchange.InOut, `{"query": "install", "top_k": 1e6}`)
	if err := p.Process(context.Background(), ex); err == nil || !strings.Contains(err.Error(), "max_top_k 7") {
		t.Errorf("top_k 1e6 in a body: %v", err)
	}
	hits, err := p.Query(context.Background(), pipeline.Query{Text: "install", TopK: 7})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, h := range hits {
		total += len(h.Chunk.Text) + len(h.Chunk.Title)
	}
	if total > 1000 || len(hits) == 0 || !strings.Contains(hits[len(hits)-1].Chunk.Text, "max_result_bytes") {
		t.Errorf("%d hits of %d bytes (max 1000)", len(hits), total)
	}
}

func TestConfigLimitsAreRetrieveDefaults(t *testing.T) {
	if config.DefaultRetrieveMaxTopK != rag.DefaultMaxTopK || config.DefaultRetrieveMaxResultBytes != rag.DefaultMaxResultBytes {
		t.Fatal("the config's default limits differ from rag.Retrieve's")
	}
}
