//go:build !helix_noonnx

package pipeline

import (
	"context"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/embed/onnx"
)

// A local ONNX sentence-embedding model; a build with -tags helix_noonnx leaves
// the ONNX Runtime binding and the tokenizer out (embed_noonnx.go). ONNX Runtime
// itself is loaded (once per process) from library_path or HELIX_ONNXRUNTIME_LIB
// only when a pipeline starts, so the helix binary runs without it until then.
func init() {
	embedders.Register("onnx", func(_ context.Context, c config.EmbedConfig) (rag.Embedder, error) {
		e, err := onnx.New(onnx.Config{ModelPath: c.ModelPath, TokenizerPath: c.TokenizerPath, LibraryPath: c.LibraryPath,
			BatchSize: c.BatchSize, QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix})
		if err != nil {
			return nil, err
		}
		return e, nil
	})
}
