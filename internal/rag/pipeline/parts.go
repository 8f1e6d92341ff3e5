package pipeline

import (
	"context"
	"log/slog"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/chunk"
	"github.com/arvenza/helix/internal/rag/embed/onnx"
	"github.com/arvenza/helix/internal/rag/embed/openai"
	"github.com/arvenza/helix/internal/rag/source"
	"github.com/arvenza/helix/internal/rag/store/embedded"
	"github.com/arvenza/helix/internal/rag/store/pgvector"
)

// DefaultParts are Helix's own parts: the chunkers of internal/rag/chunk, the openai and
// embedder, the embedded and pgvector stores and the file source.
func DefaultParts() Parts {
	return Parts{Chunker: newChunker, Embedder: newEmbedder, Store: openStore, Source: fileSource}
}

func newChunker(c config.ChunkConfig, emb rag.Embedder) (rag.Chunker, error) {
	overlap := c.Overlap
	if overlap == 0 {
		overlap = chunk.NoOverlap // the configuration has applied the default already
	}
	return chunk.New(chunk.Config{Strategy: c.Strategy, Size: c.Size, Overlap: overlap, Unit: c.Unit, Percentile: c.Percentile}, emb)
}

func newEmbedder(_ context.Context, c config.EmbedConfig) (rag.Embedder, error) {
	switch c.Provider {
	case "openai":
		return openai.New(openai.Config{Model: c.Model, APIKey: c.APIKey, BaseURL: c.BaseURL, Dimensions: c.Dimensions,
			BatchSize: c.BatchSize, QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix})
	case "onnx":
		return newONNX(c)
	}
	return nil, errNotAvailable
}

// newONNX loads a local model; ONNX Runtime itself is loaded (once per process)
// from library_path or HELIX_ONNXRUNTIME_LIB only here, at Start, so the helix
// binary runs without it until a pipeline needs it.
func newONNX(c config.EmbedConfig) (rag.Embedder, error) {
	return onnx.New(onnx.Config{ModelPath: c.ModelPath, TokenizerPath: c.TokenizerPath, LibraryPath: c.LibraryPath,
		BatchSize: c.BatchSize, QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix})
}

func openStore(ctx context.Context, p config.PipelineConfig, dataDir string, emb rag.Embedder, logger *slog.Logger) (rag.Store, error) {
	if p.Store.Store == "pgvector" {
		table := p.Store.Table
		if table == "" {
			table = pgvector.TableName(p.ID)
		}
		o := pgvector.Options{DSN: p.Store.DSN, Table: table, Logger: logger}
		if emb != nil {
			o.Model = emb.Model()
		}
		return pgvector.Open(ctx, o)
	}
	return embedded.Open(p.StorePath(dataDir), embedded.Options{Logger: logger})
}

func fileSource(src config.PipelineSource, logger *slog.Logger) (Source, error) {
	return source.Files(src.Dir, source.FileOptions{Include: src.Include, Exclude: src.Exclude, TextField: src.TextField,
		TitleField: src.TitleField, Logger: logger}), nil
}
