// Package openai is the rag-embed provider for OpenAI's embeddings API, on the
// official SDK. BaseURL points it at any OpenAI-compatible server (Ollama, vLLM,
// TEI, LiteLLM …).
//
// Texts are sent in batches (by count and by size), several batches at a time,
// retried on 429 and 5xx with the wait the server asks for, and their vectors
// are kept in a content-hash LRU cache so re-ingesting unchanged chunks and
// repeating queries cost no request.
package openai

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/rag"
)

// Defaults of [Config].
const (
	DefaultModel         = "text-embedding-3-small"
	DefaultBatchSize     = 96
	DefaultMaxBatchBytes = 250_000
	DefaultMaxRetries    = 3
	DefaultConcurrency   = 2
	DefaultCacheEntries  = 10_000
)

// Config configures an [Embedder]. Zero values take the defaults.
type Config struct {
	// Model is the embedding model; empty: "text-embedding-3-small".
	Model string
	// APIKey authenticates; empty: the SDK reads OPENAI_API_KEY (servers such as
	// Ollama need none).
	APIKey string
	// BaseURL is the API's base URL, ending in /v1 for most servers; empty: the
	// SDK reads OPENAI_BASE_URL, else OpenAI's.
	BaseURL string
	// Dimensions asks the model for shorter vectors (text-embedding-3 and later);
	// 0: the model's own size.
	Dimensions int
	// BatchSize is the most inputs per request; 0: 96.
	BatchSize int
	// MaxBatchBytes caps the total size of a request's inputs in bytes, which
	// keeps a batch under the API's per-request token limit; 0: 250,000.
	MaxBatchBytes int
	// MaxRetries is how often a request is sent again after a 429, a 5xx or a
	// network error; 0: 3, negative: never.
	MaxRetries int
	// Concurrency is the most requests in flight at once for this embedder; 0: 2.
	Concurrency int
	// CacheEntries is the size of the vector cache; 0: 10,000, negative: no cache.
	CacheEntries int
	// QueryPrefix and DocumentPrefix are prepended to queries and documents, for
	// models trained with instructions ("search_query: ").
	QueryPrefix, DocumentPrefix string
	// EncodingFormat is how vectors travel: "float" (the default: JSON numbers,
	// which every compatible server sends) or "base64" (packed float32s, much
	// cheaper to decode; OpenAI, vLLM and TEI support it).
	EncodingFormat string
	// HTTPClient sends the requests; nil: the SDK's default.
	HTTPClient *http.Client
}

// Embedder is a [rag.Embedder] on the embeddings API. Safe for concurrent use.
type Embedder struct {
	cfg    Config
	model  string // Model() result
	apiKey string // what to redact from errors: the configured or the environment's key
	client sdk.Client
	slots  chan struct{} // one per request in flight
	cache  *lru          // nil: no cache
	// backoff is the wait before retry n (from 1) when the server did not say;
	// tests shorten it.
	backoff func(n int) time.Duration
}

var _ rag.Embedder = (*Embedder)(nil)

// New builds an embedder; it sends nothing.
func New(cfg Config) (*Embedder, error) {
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Dimensions < 0 {
		return nil, fmt.Errorf("openai embeddings: dimensions %d: must be positive (or 0 for the model's size)", cfg.Dimensions)
	}
	if cfg.BatchSize < 0 || cfg.MaxBatchBytes < 0 || cfg.Concurrency < 0 {
		return nil, errors.New("openai embeddings: batch_size, max_batch_bytes and concurrency must not be negative")
	}
	switch cfg.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, fmt.Errorf("openai embeddings: encoding_format %q: want float or base64", cfg.EncodingFormat)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxBatchBytes == 0 {
		cfg.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.CacheEntries == 0 {
		cfg.CacheEntries = DefaultCacheEntries
	}
	// The SDK retries by itself unless told not to; retries here honour
	// Retry-After and the embedder's own budget instead.
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	apiKey := cfg.APIKey
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	} else {
		apiKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	model := "openai:" + cfg.Model
	if cfg.Dimensions > 0 {
		// Another size is another vector space: a store must not mix them.
		model += ":" + strconv.Itoa(cfg.Dimensions)
	}
	e := &Embedder{
		cfg:     cfg,
		model:   model,
		apiKey:  apiKey,
		client:  sdk.NewClient(opts...),
		slots:   make(chan struct{}, cfg.Concurrency),
		backoff: defaultBackoff,
	}
	if cfg.CacheEntries > 0 {
		e.cache = newLRU(cfg.CacheEntries)
	}
	return e, nil
}

// Model is "openai:" + the model name (+ ":" + dimensions when set).
func (e *Embedder) Model() string { return e.model }

// Embed returns one vector per text, in order. An empty text is sent as a single
// space: the API rejects empty inputs, and one empty chunk should not fail the
// ingest of a whole batch (its vector is the model's vector for blank text).
func (e *Embedder) Embed(ctx context.Context, texts []string, kind rag.EmbedKind) ([][]float32, error) {
	out := make([][]float32, len(texts))
	prefix := e.cfg.DocumentPrefix
	if kind == rag.EmbedQuery {
		prefix = e.cfg.QueryPrefix
	}
	// missing holds the distinct texts to request, and where each goes.
	var missing []string
	var keys []cacheKey
	positions := map[string][]int{}
	for i, t := range texts {
		t = prefix + t
		if t == "" {
			t = " "
		}
		if ps, ok := positions[t]; ok {
			positions[t] = append(ps, i)
			continue
		}
		var k cacheKey
		if e.cache != nil {
			k = e.key(kind, t)
			if v, ok := e.cache.get(k); ok {
				out[i] = v
				continue
			}
		}
		positions[t] = []int{i}
		missing = append(missing, t)
		keys = append(keys, k)
	}
	if len(missing) > 0 {
		vecs, err := e.embedAll(ctx, missing)
		if err != nil {
			return nil, err
		}
		for j, t := range missing {
			if e.cache != nil {
				e.cache.put(keys[j], vecs[j])
			}
			for _, i := range positions[t] {
				out[i] = vecs[j]
			}
		}
	}
	// Vectors are shared with the cache and between equal texts: callers get
	// their own copies, free to modify.
	for i, v := range out {
		out[i] = append([]float32(nil), v...)
	}
	return out, nil
}

// batch is a run of consecutive inputs sent in one request.
type batch struct{ start, end int }

// batches cuts texts into runs of at most BatchSize inputs and MaxBatchBytes
// bytes (a single larger text goes alone; the server says if it is too long).
func (e *Embedder) batches(texts []string) []batch {
	var bs []batch
	start, size := 0, 0
	for i, t := range texts {
		if i > start && (i-start >= e.cfg.BatchSize || size+len(t) > e.cfg.MaxBatchBytes) {
			bs = append(bs, batch{start, i})
			start, size = i, 0
		}
		size += len(t)
	}
	return append(bs, batch{start, len(texts)})
}

// embedAll requests the vectors of texts, Concurrency batches at a time; the
// first error cancels the other batches.
func (e *Embedder) embedAll(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	bs := e.batches(texts)
	if len(bs) == 1 {
		return out, e.embedBatch(ctx, texts, out)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.embedBatch(ctx, texts[b.start:b.end], out[b.start:b.end]); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		}()
	}
	wg.Wait()
	return out, first
}

// embedBatch sends one request (retried as configured) and fills out.
func (e *Embedder) embedBatch(ctx context.Context, texts []string, out [][]float32) error {
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	p := sdk.EmbeddingNewParams{
		Model: e.cfg.Model,
		Input: sdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
	}
	if e.cfg.EncodingFormat == "base64" {
		p.EncodingFormat = sdk.EmbeddingNewParamsEncodingFormatBase64
	}
	if e.cfg.Dimensions > 0 {
		p.Dimensions = sdk.Int(int64(e.cfg.Dimensions))
	}
	for attempt := 0; ; attempt++ {
		// The SDK sends the request (auth, base URL, errors); the response is
		// decoded into a lean type, as the SDK's own decoder costs several
		// allocations per number of every vector.
		var resp embeddingsResponse
		err := e.client.Post(ctx, "embeddings", p, &resp)
		if err == nil {
			return e.fill(&resp, out)
		}
		err = e.wrap(ctx, err)
		if attempt >= e.cfg.MaxRetries || !retryable(err) {
			return err
		}
		var wait time.Duration
		if pe := (*agent.ProviderError)(nil); errors.As(err, &pe) && pe.RetryAfter > 0 {
			wait = min(pe.RetryAfter, maxRetryWait)
		} else {
			wait = e.backoff(attempt + 1)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
	}
}

// maxRetryWait bounds what a server may ask to wait: longer, and the ingest is
// better off failing and being retried later.
const maxRetryWait = time.Minute

func defaultBackoff(n int) time.Duration {
	d := 500 * time.Millisecond << min(n-1, 6)
	return d/2 + rand.N(d/2+1) // jitter: concurrent batches do not retry in step
}

// embeddingsResponse is the part of the API's response that is used.
type embeddingsResponse struct {
	Data []struct {
		Index     int64  `json:"index"`
		Embedding vector `json:"embedding"`
	} `json:"data"`
}

// vector is an embedding as the API sends it: an array of numbers, or, when
// encoding_format is base64, a base64 string of little-endian float32s.
type vector []float32

func (v *vector) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return json.Unmarshal(b, (*[]float32)(v))
	}
	var raw []byte // a JSON string decodes into []byte as base64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw)%4 != 0 {
		return fmt.Errorf("base64 embedding of %d bytes is not a sequence of float32s", len(raw))
	}
	*v = make([]float32, len(raw)/4)
	for i := range *v {
		(*v)[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return nil
}

// fill puts the response's vectors into out by their index, checking that there
// is exactly one vector per input and that they all have the same size.
func (e *Embedder) fill(resp *embeddingsResponse, out [][]float32) error {
	if len(resp.Data) != len(out) {
		return e.invalid("%d vectors for %d inputs", len(resp.Data), len(out))
	}
	dim := 0
	for _, d := range resp.Data {
		i := d.Index
		if i < 0 || i >= int64(len(out)) || out[i] != nil {
			return e.invalid("index %d is out of range or repeated (%d inputs)", i, len(out))
		}
		if len(d.Embedding) == 0 {
			return e.invalid("the vector of input %d is empty", i)
		}
		if dim == 0 {
			dim = len(d.Embedding)
		} else if len(d.Embedding) != dim {
			return e.invalid("vectors of %d and %d dimensions in one response", dim, len(d.Embedding))
		}
		out[i] = d.Embedding
	}
	if e.cfg.Dimensions > 0 && dim != e.cfg.Dimensions {
		return e.invalid("vectors have %d dimensions, %d were asked for (does the model support dimensions?)", dim, e.cfg.Dimensions)
	}
	return nil
}

func (e *Embedder) invalid(format string, args ...any) error {
	return &agent.ProviderError{Provider: "openai", Message: "invalid embeddings response: " + agent.Redact(fmt.Sprintf(format, args...), e.apiKey)}
}

// wrap turns an SDK error into an *agent.ProviderError with the provider's
// message and no API key; a cancelled context returns its cause.
func (e *Embedder) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		return agent.NewProviderError("openai", e.apiKey, ae.StatusCode, ae.Message, ae.Response)
	}
	pe := agent.NewProviderError("openai", e.apiKey, 0, err.Error(), nil)
	var ne net.Error
	if errors.As(err, &ne) {
		return &networkError{pe}
	}
	return pe
}

// networkError marks a request that got no response (connection refused or
// reset, timeout): worth sending again, unlike a response that cannot be read.
type networkError struct{ *agent.ProviderError }

func (n *networkError) Unwrap() error { return n.ProviderError }

func retryable(err error) bool {
	var ne *networkError
	if errors.As(err, &ne) {
		return true
	}
	var pe *agent.ProviderError
	return errors.As(err, &pe) && pe.Retryable()
}
