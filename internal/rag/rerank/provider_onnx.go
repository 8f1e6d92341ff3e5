//go:build !helix_noonnx

package rerank

import (
	"context"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag/rerank/crossencoder"
)

// A local cross-encoder; a build with -tags helix_noonnx leaves the ONNX
// Runtime binding and the tokenizer out (provider_noonnx.go). ONNX Runtime
// itself is loaded only when the first model is, as for the onnx embedder.
func init() {
	providers.Register("onnx", func(_ context.Context, c config.RerankConfig) (Reranker, error) {
		r, err := crossencoder.New(crossencoder.Config{ModelPath: c.ModelPath, TokenizerPath: c.TokenizerPath,
			LibraryPath: c.LibraryPath, MaxLength: c.MaxLength, BatchSize: c.BatchSize})
		if err != nil {
			return nil, err
		}
		return r, nil
	})
}
