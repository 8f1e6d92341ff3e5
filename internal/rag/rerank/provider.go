package rerank

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag/rerank/httprerank"
	"github.com/arvenza/helix/internal/registry"
)

// Factory makes the reranker of a rag-rerank step with its provider.
type Factory func(ctx context.Context, c config.RerankConfig) (Reranker, error)

// providers are the rag-rerank providers linked into this build: http always,
// onnx unless built with helix_noonnx (provider_onnx.go, provider_noonnx.go).
var providers = registry.New[Factory]()

func init() {
	providers.Register("http", func(_ context.Context, c config.RerankConfig) (Reranker, error) {
		retries := 0 // the provider's default
		if c.Retries != nil {
			retries = *c.Retries
			if retries == 0 {
				retries = -1 // none, as written
			}
		}
		return httprerank.New(httprerank.Config{URL: c.URL, Format: c.Format, Model: c.Model, APIKey: c.APIKey,
			Timeout: c.Timeout, Retries: retries, BatchSize: c.BatchSize})
	})
}

// Available reports whether provider is in this build: an error naming the
// build tag that left it out, else nil.
func Available(provider string) error { return providers.Available(provider) }

// New makes the reranker of c. One from the onnx provider holds a model: close
// it (it is an io.Closer) when done.
func New(ctx context.Context, c config.RerankConfig) (Reranker, error) {
	f, ok, err := providers.Lookup(c.Provider)
	if err != nil {
		return nil, fmt.Errorf("rag-rerank provider %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("rag-rerank: unknown provider %q (use onnx or http)", c.Provider)
	}
	return f(ctx, c)
}

// shared are the rerankers of workflow steps, by what makes them: a step has
// no stop to close a model at, so a model is loaded once, on first use, and
// kept while the process runs; steps with the same reranker (and a workflow
// built again on reload) share it.
var shared struct {
	mu sync.Mutex
	m  map[sharedKey]Reranker
}

// sharedKey is what makes a reranker: a step's candidates, top_k and on_error
// are its own.
type sharedKey struct {
	provider, modelPath, tokenizerPath, libraryPath string
	maxLength, batchSize                            int
	url, format, model, apiKey                      string
	timeout                                         time.Duration
	retries                                         int
	retriesSet                                      bool
}

// Shared returns the process's reranker for c, making it on first use. A
// failure is not kept: the next call tries again.
func Shared(ctx context.Context, c config.RerankConfig) (Reranker, error) {
	key := sharedKey{provider: c.Provider, modelPath: c.ModelPath, tokenizerPath: c.TokenizerPath, libraryPath: c.LibraryPath,
		maxLength: c.MaxLength, batchSize: c.BatchSize, url: c.URL, format: c.Format, model: c.Model, apiKey: c.APIKey,
		timeout: c.Timeout, retriesSet: c.Retries != nil}
	if c.Retries != nil {
		key.retries = *c.Retries
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if r, ok := shared.m[key]; ok {
		return r, nil
	}
	r, err := New(ctx, c)
	if err != nil {
		return nil, err
	}
	if shared.m == nil {
		shared.m = map[sharedKey]Reranker{}
	}
	shared.m[key] = r
	return r, nil
}
