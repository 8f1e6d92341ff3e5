package pipeline

import (
	"context"
	"log/slog"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/chunk"
	"github.com/arvenza/helix/internal/rag/rerank"
	"github.com/arvenza/helix/internal/rag/source"
	"github.com/arvenza/helix/internal/rag/store/embedded"
	"github.com/arvenza/helix/internal/rag/store/pgvector"
	"github.com/arvenza/helix/internal/registry"
)

// DefaultParts are Helix's own parts: the chunkers of internal/rag/chunk, the
// embedders linked into this build (openai, onnx: see embedders), the embedded and
// pgvector stores, the file source and the rerankers of internal/rag/rerank.
func DefaultParts() Parts {
	return Parts{Chunker: newChunker, Embedder: newEmbedder, Store: openStore, Source: fileSource, Reranker: rerank.New}
}

func newChunker(c config.ChunkConfig, emb rag.Embedder) (rag.Chunker, error) {
	overlap := c.Overlap
	if overlap == 0 {
		overlap = chunk.NoOverlap // the configuration has applied the default already
	}
	return chunk.New(chunk.Config{Strategy: c.Strategy, Size: c.Size, Overlap: overlap, Unit: c.Unit, Percentile: c.Percentile}, emb)
}

// EmbedderFunc makes the embedder of a rag-embed step with its provider.
type EmbedderFunc func(ctx context.Context, c config.EmbedConfig) (rag.Embedder, error)

// embedders are the rag-embed providers linked into this build, filled by the
// registration files (embed_*.go), each guarded by the build tag that leaves its
// dependencies out: this package imports no embedder itself.
var embedders = registry.New[EmbedderFunc]()

func newEmbedder(ctx context.Context, c config.EmbedConfig) (rag.Embedder, error) {
	f, ok, err := embedders.Lookup(c.Provider)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotAvailable
	}
	return f(ctx, c)
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
