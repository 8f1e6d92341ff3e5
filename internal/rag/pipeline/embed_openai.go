//go:build !helix_nollm

package pipeline

import (
	"context"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/embed/openai"
)

// The OpenAI embeddings API (and compatible servers); a build with -tags
// helix_nollm leaves the OpenAI SDK out (embed_nollm.go).
func init() {
	embedders.Register("openai", func(_ context.Context, c config.EmbedConfig) (rag.Embedder, error) {
		e, err := openai.New(openai.Config{Model: c.Model, APIKey: c.APIKey, BaseURL: c.BaseURL, Dimensions: c.Dimensions,
			BatchSize: c.BatchSize, QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix})
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return e, nil
	})
}
