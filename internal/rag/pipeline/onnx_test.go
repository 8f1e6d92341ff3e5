package pipeline_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag/embed/onnx/onnxtest"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/testtools"
)

// A pipeline on a local ONNX model (generated here, random weights): semantic
// chunking and vector retrieval run with Helix's own parts and nothing remote.
func TestONNXPipeline(t *testing.T) {
	lib := testtools.ONNXRuntimeLib(t)
	modelDir, dir := t.TempDir(), t.TempDir()
	model := onnxtest.WriteModel(t, modelDir, onnxtest.ModelOptions{})
	onnxtest.WriteTokenizer(t, modelDir, nil)
	writeFiles(t, dir, map[string]string{
		"drinks.md": "# Drinks\n\nThe coffee is hot. The tea is cold.\n\nA cup of coffee is good.",
		"words.md":  "Search a long document. Query the text word.",
	})
	cfg := config.PipelineConfig{ID: "local", Source: &config.PipelineSource{Dir: dir},
		Chunk: config.ChunkConfig{Strategy: "semantic", Size: 64, Overlap: 8, Unit: "tokens"},
		Embed: &config.EmbedConfig{Provider: "onnx", ModelPath: model, LibraryPath: lib},
		Store: config.StoreConfig{Store: "embedded"}, Retrieve: config.RetrieveConfig{Strategy: "vector", TopK: 2}, Output: "json"}
	p, err := pipeline.New(cfg, pipeline.Options{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	startAndWait(t, p)
	defer p.Stop(context.Background())
	if pr := p.Progress(); pr.Ingested != 2 || pr.Errors != 0 || pr.Chunks == 0 {
		t.Fatalf("ingest = %+v", pr.Result)
	}
	hits, err := p.Query(context.Background(), pipeline.Query{Text: "hot coffee"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("hits %v, err %v", hits, err)
	}
	hits, err = p.Query(context.Background(), pipeline.Query{Text: "coffee", Strategy: "hybrid"})
	if err != nil || len(hits) == 0 {
		t.Fatalf("hybrid: hits %v, err %v", hits, err)
	}
}
