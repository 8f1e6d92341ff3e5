package openai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/rag"
)

const testKey = "sk-test-secret-key-0123456789"

// request is what the fake server received.
type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions"`
	EncodingFormat string   `json:"encoding_format"`
}

// fakeServer speaks the embeddings wire format: a text's vector is derived from
// its bytes, so tests can check which vector went where.
type fakeServer struct {
	t        testing.TB
	requests atomic.Int64
	mu       sync.Mutex
	got      []request
	// reply, when set, answers instead of the default handler; it returns false
	// to let the default handler answer.
	reply func(w http.ResponseWriter, n int64, req request) bool
	// reverse sends the data in reverse order (the index fields say where each goes).
	reverse bool
	dim     int
}

func newFake(t testing.TB) (*fakeServer, *httptest.Server) {
	f := &fakeServer{t: t, dim: 4}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// vectorOf is the fake model: deterministic, different for different texts.
func vectorOf(text string, dim int) []float64 {
	v := make([]float64, dim)
	for i, b := range []byte(text) {
		v[i%dim] += float64(b) / 256
	}
	v[0] += float64(len(text))
	return v
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+strings.TrimPrefix(got, "Bearer ")+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := f.requests.Add(1)
	f.mu.Lock()
	f.got = append(f.got, req)
	f.mu.Unlock()
	if f.reply != nil && f.reply(w, n, req) {
		return
	}
	for _, in := range req.Input {
		if in == "" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error"}}`)
			return
		}
	}
	dim := f.dim
	if req.Dimensions > 0 {
		dim = req.Dimensions
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, in := range req.Input {
		v := vectorOf(in, dim)
		var emb any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(float32(x)))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		}
		j := i
		if f.reverse {
			j = len(data) - 1 - i
		}
		data[j] = item{"embedding", i, emb}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)},
	})
}

func (f *fakeServer) requestsSeen() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.got...)
}

func newEmbedder(t testing.TB, srv *httptest.Server, cfg Config) *Embedder {
	t.Helper()
	cfg.BaseURL = srv.URL + "/v1"
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.backoff = func(int) time.Duration { return time.Millisecond }
	return e
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text number %d", i)
	}
	return out
}

func checkVectors(t *testing.T, in []string, got [][]float32, dim int) {
	t.Helper()
	if len(got) != len(in) {
		t.Fatalf("got %d vectors for %d texts", len(got), len(in))
	}
	for i, s := range in {
		want := vectorOf(s, dim)
		if len(got[i]) != dim {
			t.Fatalf("vector %d has %d dimensions, want %d", i, len(got[i]), dim)
		}
		for j := range want {
			if math.Abs(float64(got[i][j])-want[j]) > 1e-3*math.Max(1, math.Abs(want[j])) {
				t.Fatalf("vector %d (%q) = %v, want %v", i, s, got[i], want)
			}
		}
	}
}

func TestEmbedOrderAndModel(t *testing.T) {
	f, srv := newFake(t)
	f.reverse = true
	e := newEmbedder(t, srv, Config{})
	if got := e.Model(); got != "openai:text-embedding-3-small" {
		t.Errorf("Model() = %q", got)
	}
	in := []string{"alpha", "beta", "gamma"}
	got, err := e.Embed(context.Background(), in, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, in, got, 4)
	reqs := f.requestsSeen()
	if len(reqs) != 1 || reqs[0].Model != "text-embedding-3-small" || reqs[0].Dimensions != 0 {
		t.Fatalf("requests: %+v", reqs)
	}
}

func TestDimensionsPassedAndInModelName(t *testing.T) {
	f, srv := newFake(t)
	e := newEmbedder(t, srv, Config{Model: "text-embedding-3-large", Dimensions: 8})
	if got := e.Model(); got != "openai:text-embedding-3-large:8" {
		t.Errorf("Model() = %q", got)
	}
	got, err := e.Embed(context.Background(), []string{"x"}, rag.EmbedQuery)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, []string{"x"}, got, 8)
	if r := f.requestsSeen()[0]; r.Dimensions != 8 || r.Model != "text-embedding-3-large" {
		t.Errorf("request: %+v", r)
	}
}

func TestBase64Response(t *testing.T) {
	// Some servers answer base64 (OpenAI does when asked): the SDK decodes it.
	f, srv := newFake(t)
	f.reply = func(w http.ResponseWriter, _ int64, req request) bool {
		w.Header().Set("Content-Type", "application/json")
		b := make([]byte, 16)
		for j, x := range vectorOf(req.Input[0], 4) {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(float32(x)))
		}
		fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":%q}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`,
			base64.StdEncoding.EncodeToString(b))
		return true
	}
	e := newEmbedder(t, srv, Config{})
	got, err := e.Embed(context.Background(), []string{"hello"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, []string{"hello"}, got, 4)
	if r := f.requestsSeen()[0]; r.EncodingFormat != "" {
		t.Errorf("encoding_format %q sent; the float default is what every compatible server supports", r.EncodingFormat)
	}
}

func TestBase64Requested(t *testing.T) {
	f, srv := newFake(t)
	e := newEmbedder(t, srv, Config{EncodingFormat: "base64"})
	in := []string{"hello", "world"}
	got, err := e.Embed(context.Background(), in, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, in, got, 4)
	if r := f.requestsSeen()[0]; r.EncodingFormat != "base64" {
		t.Errorf("encoding_format %q", r.EncodingFormat)
	}
	if _, err := New(Config{EncodingFormat: "binary"}); err == nil {
		t.Error("unknown encoding format accepted")
	}
}

func TestBatching(t *testing.T) {
	f, srv := newFake(t)
	e := newEmbedder(t, srv, Config{BatchSize: 100})
	in := texts(250)
	got, err := e.Embed(context.Background(), in, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, in, got, 4)
	sizes := map[int]int{}
	for _, r := range f.requestsSeen() {
		sizes[len(r.Input)]++
	}
	if len(f.requestsSeen()) != 3 || sizes[100] != 2 || sizes[50] != 1 {
		t.Errorf("batch sizes %v, want 100, 100, 50", sizes)
	}
}

func TestBatchingByBytes(t *testing.T) {
	f, srv := newFake(t)
	e := newEmbedder(t, srv, Config{MaxBatchBytes: 25})
	in := []string{strings.Repeat("a", 10), strings.Repeat("b", 10), strings.Repeat("c", 10), strings.Repeat("d", 40), "e"}
	got, err := e.Embed(context.Background(), in, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, in, got, 4)
	var sizes []int
	for _, r := range f.requestsSeen() {
		sizes = append(sizes, len(r.Input))
	}
	// a+b (20 bytes), c (c+d would exceed), d alone (larger than the cap), e.
	if len(sizes) != 4 {
		t.Errorf("batch sizes %v, want [2 1 1 1] in some order", sizes)
	}
}

func TestCacheSkipsRequests(t *testing.T) {
	f, srv := newFake(t)
	e := newEmbedder(t, srv, Config{})
	ctx := context.Background()
	if _, err := e.Embed(ctx, []string{"a", "b"}, rag.EmbedDocument); err != nil {
		t.Fatal(err)
	}
	got, err := e.Embed(ctx, []string{"b", "a", "c", "c"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, []string{"b", "a", "c", "c"}, got, 4)
	reqs := f.requestsSeen()
	if len(reqs) != 2 || len(reqs[1].Input) != 1 || reqs[1].Input[0] != "c" {
		t.Fatalf("second request should carry only the uncached text once: %+v", reqs)
	}
	// A query is cached apart from a document of the same text.
	if _, err := e.Embed(ctx, []string{"a"}, rag.EmbedQuery); err != nil {
		t.Fatal(err)
	}
	if n := f.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	// Returned vectors are the caller's: changing them does not change the cache.
	got[0][0] = 1e9
	again, _ := e.Embed(ctx, []string{"b"}, rag.EmbedDocument)
	checkVectors(t, []string{"b"}, again, 4)
}

func TestCacheEvicts(t *testing.T) {
	f, srv := newFake(t)
	e := newEmbedder(t, srv, Config{CacheEntries: 2})
	ctx := context.Background()
	for _, s := range []string{"a", "b", "c", "a"} {
		if _, err := e.Embed(ctx, []string{s}, rag.EmbedDocument); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.requests.Load(); n != 4 {
		t.Errorf("%d requests, want 4 (a was evicted by c)", n)
	}
	if e.cache.len() != 2 {
		t.Errorf("cache holds %d entries, want 2", e.cache.len())
	}
}

func TestPrefixes(t *testing.T) {
	f, srv := newFake(t)
	e := newEmbedder(t, srv, Config{QueryPrefix: "search_query: ", DocumentPrefix: "search_document: "})
	ctx := context.Background()
	if _, err := e.Embed(ctx, []string{"x"}, rag.EmbedQuery); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(ctx, []string{"x"}, rag.EmbedDocument); err != nil {
		t.Fatal(err)
	}
	reqs := f.requestsSeen()
	if reqs[0].Input[0] != "search_query: x" || reqs[1].Input[0] != "search_document: x" {
		t.Errorf("inputs %q, %q", reqs[0].Input, reqs[1].Input)
	}
}

func TestEmptyTextSentAsSpace(t *testing.T) {
	f, srv := newFake(t)
	e := newEmbedder(t, srv, Config{})
	got, err := e.Embed(context.Background(), []string{"a", ""}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, []string{"a", " "}, got, 4)
	if in := f.requestsSeen()[0].Input; in[1] != " " {
		t.Errorf("inputs %q", in)
	}
	if got, err := e.Embed(context.Background(), nil, rag.EmbedDocument); err != nil || len(got) != 0 {
		t.Errorf("no texts: %v, %v", got, err)
	}
}

func TestRetryAfter429(t *testing.T) {
	f, srv := newFake(t)
	f.reply = func(w http.ResponseWriter, n int64, _ request) bool {
		if n > 2 {
			return false
		}
		w.Header().Set("Retry-After-Ms", "5")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests"}}`)
		return true
	}
	e := newEmbedder(t, srv, Config{})
	// The server's wait must be used, not the backoff.
	e.backoff = func(int) time.Duration { t.Error("backoff used although the server said how long"); return 0 }
	got, err := e.Embed(context.Background(), []string{"a"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, []string{"a"}, got, 4)
	if n := f.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestConnectionDropRetried(t *testing.T) {
	f, srv := newFake(t)
	f.reply = func(w http.ResponseWriter, n int64, _ request) bool {
		if n > 1 {
			return false
		}
		// The connection drops before any response: worth sending again.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return true
		}
		conn.Close()
		return true
	}
	e := newEmbedder(t, srv, Config{})
	got, err := e.Embed(context.Background(), []string{"a"}, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, []string{"a"}, got, 4)
	if n := f.requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	e, err := New(Config{BaseURL: url + "/v1", APIKey: testKey, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.backoff = func(int) time.Duration { return time.Millisecond }
	_, err = e.Embed(context.Background(), []string{"a"}, rag.EmbedDocument)
	var pe *agent.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 0 || strings.Contains(err.Error(), testKey) {
		t.Fatalf("err = %v", err)
	}
}

func TestRetriesExhausted(t *testing.T) {
	f, srv := newFake(t)
	f.reply = func(w http.ResponseWriter, _ int64, _ request) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"overloaded"}}`)
		return true
	}
	e := newEmbedder(t, srv, Config{MaxRetries: 2})
	_, err := e.Embed(context.Background(), []string{"a"}, rag.EmbedDocument)
	var pe *agent.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 503 || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("err = %v", err)
	}
	if n := f.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (1 + 2 retries)", n)
	}
}

func TestBadRequestSurfaced(t *testing.T) {
	f, srv := newFake(t)
	f.reply = func(w http.ResponseWriter, _ int64, _ request) bool {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error"}}`)
		return true
	}
	e := newEmbedder(t, srv, Config{})
	_, err := e.Embed(context.Background(), []string{"a"}, rag.EmbedDocument)
	var pe *agent.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 400 || !strings.Contains(err.Error(), "maximum context length is 8192 tokens") {
		t.Fatalf("err = %v", err)
	}
	if n := f.requests.Load(); n != 1 {
		t.Errorf("a 400 was sent %d times; it must not be retried", n)
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	_, srv := newFake(t)
	// The server echoes the (wrong) key it got, as some proxies do.
	e := newEmbedder(t, srv, Config{APIKey: "sk-wrong-key-abcdef123456"})
	_, err := e.Embed(context.Background(), []string{"a"}, rag.EmbedDocument)
	if err == nil || strings.Contains(err.Error(), "sk-wrong-key-abcdef123456") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err = %v", err)
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	_, srv := newFake(t)
	t.Setenv("OPENAI_API_KEY", testKey)
	e, err := New(Config{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"a"}, rag.EmbedDocument); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedJSON(t *testing.T) {
	f, srv := newFake(t)
	f.reply = func(w http.ResponseWriter, _ int64, _ request) bool {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"index":0,"embedding":[0.1,`)
		return true
	}
	e := newEmbedder(t, srv, Config{})
	_, err := e.Embed(context.Background(), []string{"a"}, rag.EmbedDocument)
	if err == nil {
		t.Fatal("no error for a truncated response")
	}
	if n := f.requests.Load(); n != 1 {
		t.Errorf("%d requests; an unreadable response is not retried", n)
	}
}

func TestWrongCount(t *testing.T) {
	for name, body := range map[string]string{
		"too few":      `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2]}],"model":"m","usage":{}}`,
		"repeated":     `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2]},{"object":"embedding","index":0,"embedding":[1,2]}],"model":"m","usage":{}}`,
		"out of range": `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2]},{"object":"embedding","index":5,"embedding":[1,2]}],"model":"m","usage":{}}`,
		"sizes":        `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2]},{"object":"embedding","index":1,"embedding":[1]}],"model":"m","usage":{}}`,
		"empty":        `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[]},{"object":"embedding","index":1,"embedding":[]}],"model":"m","usage":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f, srv := newFake(t)
			f.reply = func(w http.ResponseWriter, _ int64, _ request) bool {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, body)
				return true
			}
			e := newEmbedder(t, srv, Config{})
			_, err := e.Embed(context.Background(), []string{"a", "b"}, rag.EmbedDocument)
			if err == nil || !strings.Contains(err.Error(), "invalid embeddings response") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestCancellation(t *testing.T) {
	f, srv := newFake(t)
	arrived := make(chan struct{}, 10)
	release := make(chan struct{})
	defer close(release)
	f.reply = func(w http.ResponseWriter, _ int64, _ request) bool {
		arrived <- struct{}{}
		<-release
		return false
	}
	e := newEmbedder(t, srv, Config{BatchSize: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Embed(ctx, texts(5), rag.EmbedDocument)
		done <- err
	}()
	<-arrived
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Embed did not return after cancellation")
	}
}

func TestCancelDuringRetryWait(t *testing.T) {
	f, srv := newFake(t)
	f.reply = func(w http.ResponseWriter, _ int64, _ request) bool {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}
	e := newEmbedder(t, srv, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Embed(ctx, []string{"a"}, rag.EmbedDocument)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}

func TestConcurrencyBound(t *testing.T) {
	f, srv := newFake(t)
	var inFlight, peak atomic.Int64
	f.reply = func(w http.ResponseWriter, _ int64, _ request) bool {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // keeps requests overlapping; not synchronisation
		inFlight.Add(-1)
		return false
	}
	e := newEmbedder(t, srv, Config{BatchSize: 1, Concurrency: 3})
	in := texts(20)
	got, err := e.Embed(context.Background(), in, rag.EmbedDocument)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, in, got, 4)
	if p := peak.Load(); p > 3 {
		t.Errorf("%d requests in flight, limit 3", p)
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := New(Config{Dimensions: -1}); err == nil {
		t.Error("negative dimensions accepted")
	}
	if _, err := New(Config{BatchSize: -1}); err == nil {
		t.Error("negative batch size accepted")
	}
}

// BenchmarkEmbed1000 measures Helix's side of embedding 1,000 texts (batching,
// the SDK's encoding and decoding, placing vectors) against a server that answers
// at once with prepared bodies; no cache hits.
func BenchmarkEmbed1000(b *testing.B) {
	for _, format := range []string{"float", "base64"} {
		b.Run(format, func(b *testing.B) { benchmarkEmbed1000(b, format) })
	}
}

func benchmarkEmbed1000(b *testing.B, format string) {
	f, srv := newFake(b)
	const dim = 1536
	var mu sync.Mutex
	bodies := map[int][]byte{} // by batch size
	encode := func(v []float64) []byte {
		if format == "float" {
			j, _ := json.Marshal(v)
			return j
		}
		raw := make([]byte, 4*len(v))
		for j, x := range v {
			binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(float32(x)))
		}
		return []byte(strconv.Quote(base64.StdEncoding.EncodeToString(raw)))
	}
	f.reply = func(w http.ResponseWriter, _ int64, req request) bool {
		mu.Lock()
		body, ok := bodies[len(req.Input)]
		if !ok {
			var sb strings.Builder
			sb.WriteString(`{"object":"list","data":[`)
			for i := range req.Input {
				if i > 0 {
					sb.WriteByte(',')
				}
				v := encode(vectorOf(req.Input[i], dim))
				fmt.Fprintf(&sb, `{"object":"embedding","index":%d,"embedding":%s}`, i, v)
			}
			sb.WriteString(`],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`)
			body = []byte(sb.String())
			bodies[len(req.Input)] = body
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
		return true
	}
	in := texts(1000)
	for i := range in {
		in[i] += strings.Repeat(" lorem ipsum", 40)
	}
	e := newEmbedder(b, srv, Config{CacheEntries: -1, EncodingFormat: format})
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Embed(context.Background(), in, rag.EmbedDocument); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in)), "ns/text")
}
