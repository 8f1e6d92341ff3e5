package pipeline

import (
	"context"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/rag"
	"github.com/arvenza/helix/pkg/rag/embed/openai"
)

// DefaultParts are Helix's own parts: the chunkers of pkg/rag/chunk, the openai
// and onnx embedders, the embedded and pgvector stores and the file source.
func DefaultParts() Parts {
	return Parts{
		Embedder: newEmbedder,
	}
}

func newEmbedder(_ context.Context, c config.EmbedConfig) (rag.Embedder, error) {
	switch c.Provider {
	case "openai":
		return openai.New(openai.Config{Model: c.Model, APIKey: c.APIKey, BaseURL: c.BaseURL, Dimensions: c.Dimensions,
			BatchSize: c.BatchSize, QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix})
	}
	return nil, errNotAvailable
}
