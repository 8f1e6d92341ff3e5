// Package httprerank is the rag-rerank provider for a rerank endpoint: a
// hosted API or a local server speaking one of the common wire formats.
//
//   - cohere (Cohere's /v1/rerank and /v2/rerank, and servers copying it) and
//     jina (Jina AI's /v1/rerank): POST {model, query, documents, top_n} →
//     {results: [{index, relevance_score}]};
//   - tei (Hugging Face's text-embeddings-inference /rerank): POST {query,
//     texts} → [{index, score}].
//
// The answer is checked before it is believed: every passage scored exactly
// once, indexes in range, numbers that are numbers, at most MaxResponseBytes.
package httprerank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Wire formats.
const (
	FormatCohere = "cohere"
	FormatJina   = "jina"
	FormatTEI    = "tei"
)

// Formats are the wire formats, the default first.
var Formats = []string{FormatCohere, FormatJina, FormatTEI}

// Defaults of [Config].
const (
	DefaultTimeout = 30 * time.Second
	DefaultRetries = 3
	// DefaultBatchSize is TEI's default limit of texts per request; Cohere and
	// Jina take more, but smaller requests also run in parallel.
	DefaultBatchSize = 32
	// DefaultMaxResponseBytes bounds an answer: scores for a batch are a few
	// kilobytes, even with the documents echoed back.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultBackoff is the first wait before a retry; it doubles each time.
	DefaultBackoff = 500 * time.Millisecond
	// MaxRetryAfter caps what a Retry-After header may make a query wait.
	MaxRetryAfter = 30 * time.Second
	// parallel is how many batches of one query are in flight at once.
	parallel = 4
)

// Config configures a [Reranker].
type Config struct {
	// URL is the endpoint's full URL (https://api.cohere.com/v2/rerank,
	// http://localhost:8080/rerank); required.
	URL    string
	Format string // cohere (default), jina or tei
	// Model is sent as "model" (cohere, jina); TEI serves one model and takes none.
	Model string
	// APIKey is sent as "Authorization: Bearer …" when set; it is never put in
	// an error.
	APIKey string
	// Timeout bounds each request (retries have their own); 0: DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a 429, a 5xx or a failed connection is retried;
	// 0: DefaultRetries, negative: none.
	Retries int
	// BatchSize is the most passages per request; 0: DefaultBatchSize.
	BatchSize int
	// MaxResponseBytes bounds an answer's body; 0: DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Backoff is the first wait before a retry; 0: DefaultBackoff.
	Backoff time.Duration
	// Client sends the requests; nil: a client of its own.
	Client *http.Client
}

// Reranker scores passages by asking the endpoint. Safe for concurrent use.
type Reranker struct {
	cfg Config
}

// New checks cfg and returns the reranker; it sends nothing.
func New(cfg Config) (*Reranker, error) {
	if cfg.URL == "" {
		return nil, errors.New("http reranker: url is required (the rerank endpoint's full URL)")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("http reranker: url %q is not an http:// or https:// URL", cfg.URL)
	}
	switch cfg.Format {
	case "":
		cfg.Format = FormatCohere
	case FormatCohere, FormatJina, FormatTEI:
	default:
		return nil, fmt.Errorf("http reranker: format %q: use %s", cfg.Format, strings.Join(Formats, ", "))
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	cfg.Retries = max(cfg.Retries, 0)
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	return &Reranker{cfg: cfg}, nil
}

// Name is "http:" + the format + ":" + the model (when set).
func (r *Reranker) Name() string {
	if r.cfg.Model == "" {
		return "http:" + r.cfg.Format
	}
	return "http:" + r.cfg.Format + ":" + r.cfg.Model
}

// Score asks the endpoint for the passages' scores, BatchSize per request, a
// few requests at once.
func (r *Reranker) Score(ctx context.Context, query string, passages []string) ([]float64, error) {
	out := make([]float64, len(passages))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, parallel)
	for start := 0; start < len(passages); start += r.cfg.BatchSize {
		end := min(start+r.cfg.BatchSize, len(passages))
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			scores, err := r.scoreBatch(ctx, query, passages[start:end])
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
				return
			}
			copy(out[start:end], scores)
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	return out, nil
}

// scoreBatch sends one request, retrying 429s, 5xx and failed connections.
func (r *Reranker) scoreBatch(ctx context.Context, query string, passages []string) ([]float64, error) {
	body, err := r.request(query, passages)
	if err != nil {
		return nil, err
	}
	wait := r.cfg.Backoff
	for attempt := 0; ; attempt++ {
		scores, retryAfter, err := r.send(ctx, body, len(passages))
		if err == nil {
			return scores, nil
		}
		var re *retryable
		if !errors.As(err, &re) || attempt >= r.cfg.Retries || ctx.Err() != nil {
			if re != nil && attempt > 0 {
				return nil, fmt.Errorf("%w (after %d retries)", err, attempt)
			}
			return nil, err
		}
		d := wait
		if retryAfter > 0 {
			d = min(retryAfter, MaxRetryAfter)
		}
		wait *= 2
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		}
	}
}

// retryable marks an error worth another try.
type retryable struct{ err error }

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

func (r *Reranker) request(query string, passages []string) ([]byte, error) {
	var v any
	switch r.cfg.Format {
	case FormatTEI:
		// truncate: a passage over the model's length is cut by the server
		// rather than failing the request.
		v = map[string]any{"query": query, "texts": passages, "truncate": true}
	case FormatJina:
		v = map[string]any{"model": r.cfg.Model, "query": query, "documents": passages, "top_n": len(passages), "return_documents": false}
	default:
		m := map[string]any{"query": query, "documents": passages, "top_n": len(passages)}
		if r.cfg.Model != "" {
			m["model"] = r.cfg.Model
		}
		v = m
	}
	return json.Marshal(v)
}

// send makes one request; retryAfter is what a 429 or 503 asked to wait.
func (r *Reranker) send(ctx context.Context, body []byte, n int) (scores []float64, retryAfter time.Duration, err error) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, r.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("http reranker: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if r.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.APIKey)
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, context.Cause(ctx)
		}
		if rctx.Err() != nil {
			return nil, 0, &retryable{fmt.Errorf("http reranker: %s did not answer within %v (timeout)", r.cfg.URL, r.cfg.Timeout)}
		}
		return nil, 0, &retryable{fmt.Errorf("http reranker: %s: %v", r.cfg.URL, r.redact(err.Error()))}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, r.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, 0, &retryable{fmt.Errorf("http reranker: reading the answer of %s: %v", r.cfg.URL, err)}
	}
	if int64(len(data)) > r.cfg.MaxResponseBytes {
		return nil, 0, fmt.Errorf("http reranker: the answer of %s is over %d bytes: is url a rerank endpoint?", r.cfg.URL, r.cfg.MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("http reranker: %s answered %s: %s", r.cfg.URL, resp.Status, r.snippet(data))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return nil, parseRetryAfter(resp.Header.Get("Retry-After")), &retryable{err}
		}
		return nil, 0, err
	}
	scores, err = r.parse(data, n)
	if err != nil {
		return nil, 0, fmt.Errorf("http reranker: the answer of %s: %w", r.cfg.URL, err)
	}
	return scores, 0, nil
}

type scored struct {
	Index *int     `json:"index"`
	Score *float64 `json:"score"`
	// RelevanceScore is Cohere's and Jina's name for the score.
	RelevanceScore *float64 `json:"relevance_score"`
}

// parse reads the answer's scores into the passages' order, refusing an
// answer that does not score each of the n passages once.
func (r *Reranker) parse(data []byte, n int) ([]float64, error) {
	var results []scored
	if r.cfg.Format == FormatTEI {
		if err := json.Unmarshal(data, &results); err != nil {
			return nil, fmt.Errorf("not a TEI rerank answer ([{index, score}]): %v", err)
		}
	} else {
		var a struct {
			Results *[]scored `json:"results"`
		}
		if err := json.Unmarshal(data, &a); err != nil || a.Results == nil {
			if err == nil {
				err = errors.New(`no "results"`)
			}
			return nil, fmt.Errorf("not a %s rerank answer ({results: [{index, relevance_score}]}): %v", r.cfg.Format, err)
		}
		results = *a.Results
	}
	out := make([]float64, n)
	seen := make([]bool, n)
	for i, s := range results {
		score := s.Score
		if r.cfg.Format != FormatTEI {
			score = s.RelevanceScore
		}
		switch {
		case s.Index == nil || score == nil:
			return nil, fmt.Errorf("result %d has no index or no score", i+1)
		case *s.Index < 0 || *s.Index >= n:
			return nil, fmt.Errorf("result %d has index %d, but %d passages were sent", i+1, *s.Index, n)
		case seen[*s.Index]:
			return nil, fmt.Errorf("passage %d is scored twice", *s.Index)
		case math.IsNaN(*score) || math.IsInf(*score, 0):
			return nil, fmt.Errorf("passage %d scored %v", *s.Index, *score)
		}
		seen[*s.Index] = true
		out[*s.Index] = *score
	}
	if len(results) != n {
		return nil, fmt.Errorf("%d of the %d passages were scored", len(results), n)
	}
	return out, nil
}

// snippet is the start of an error answer, for the error message, without the
// API key should the server echo it.
func (r *Reranker) snippet(data []byte) string {
	s := r.redact(strings.TrimSpace(string(data)))
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	if s == "" {
		s = "(no body)"
	}
	return s
}

func (r *Reranker) redact(s string) string {
	if r.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, r.cfg.APIKey, "[api_key]")
}

// parseRetryAfter reads a Retry-After header in seconds or as an HTTP date; 0
// when absent or unreadable.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
