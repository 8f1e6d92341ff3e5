package httprerank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fake is a rerank server speaking format: it scores a text by how many of the
// query's words it contains (a known function, so the expected scores are
// computed), answering best first as the real services do.
type fake struct {
	format   string
	requests atomic.Int64
	// answer, when set, replaces the answer (hostile servers).
	answer func(w http.ResponseWriter, r *http.Request, n int) bool
	// seen is the last request's body.
	seen atomic.Value
}

func overlap(query, text string) float64 {
	n := 0
	for _, w := range strings.Fields(query) {
		if strings.Contains(text, w) {
			n++
		}
	}
	return float64(n) / 10
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	var req struct {
		Model     string   `json:"model"`
		Query     string   `json:"query"`
		Documents []string `json:"documents"`
		Texts     []string `json:"texts"`
		TopN      *int     `json:"top_n"`
	}
	b, _ := io.ReadAll(r.Body)
	f.seen.Store(string(b))
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	texts := req.Documents
	if f.format == FormatTEI {
		texts = req.Texts
	}
	if f.answer != nil && f.answer(w, r, len(texts)) {
		return
	}
	type res struct {
		Index int     `json:"index"`
		Score float64 `json:"score,omitempty"`
		Rel   float64 `json:"relevance_score,omitempty"`
	}
	var out []res
	for i, t := range texts {
		s := overlap(req.Query, t) + 0.001 // never 0: omitempty
		if f.format == FormatTEI {
			out = append(out, res{Index: i, Score: s})
		} else {
			out = append(out, res{Index: i, Rel: s})
		}
	}
	slices.SortFunc(out, func(a, b res) int { return int((b.Score + b.Rel - a.Score - a.Rel) * 1000) })
	w.Header().Set("Content-Type", "application/json")
	if f.format == FormatTEI {
		json.NewEncoder(w).Encode(out)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "x", "results": out, "meta": map[string]any{}})
}

func serve(t *testing.T, f *fake) string {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	path := "/v1/rerank"
	if f.format == FormatTEI {
		path = "/rerank"
	}
	return srv.URL + path
}

func newReranker(t *testing.T, cfg Config) *Reranker {
	t.Helper()
	cfg.Backoff = time.Millisecond // retries in tests wait next to nothing
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var passages = []string{"cold tea", "hot coffee in a cup", "coffee", "a hot day", "nothing at all"}

func TestFormats(t *testing.T) {
	t.Parallel()
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			f := &fake{format: format}
			// Batches of 2: five passages take three requests, answered best
			// first, put back in the passages' order.
			r := newReranker(t, Config{URL: serve(t, f), Format: format, Model: "rerank-test", APIKey: "k", BatchSize: 2})
			got, err := r.Score(context.Background(), "hot coffee", passages)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range passages {
				if want := overlap("hot coffee", p) + 0.001; got[i] != want {
					t.Errorf("passage %d scored %v, want %v", i, got[i], want)
				}
			}
			if n := f.requests.Load(); n != 3 {
				t.Errorf("%d requests, want 3", n)
			}
			var req map[string]any
			json.Unmarshal([]byte(f.seen.Load().(string)), &req)
			if format == FormatTEI {
				if _, ok := req["texts"]; !ok || req["model"] != nil {
					t.Errorf("TEI request %v", req)
				}
			} else if req["model"] != "rerank-test" || req["top_n"] == nil || req["documents"] == nil {
				t.Errorf("%s request %v", format, req)
			}
		})
	}
}

func TestAuthorization(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	f := &fake{format: FormatCohere, answer: func(w http.ResponseWriter, r *http.Request, n int) bool {
		got.Store(r.Header.Get("Authorization"))
		return false
	}}
	r := newReranker(t, Config{URL: serve(t, f), APIKey: "sekrit-key"})
	if _, err := r.Score(context.Background(), "q", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if got.Load() != "Bearer sekrit-key" {
		t.Errorf("Authorization %q", got.Load())
	}
}

func hostile(body string, status int) func(http.ResponseWriter, *http.Request, int) bool {
	return func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		w.WriteHeader(status)
		io.WriteString(w, body)
		return true
	}
}

func TestHostileAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, format string
		answer       func(http.ResponseWriter, *http.Request, int) bool
		want         string
	}{
		{"index out of range", FormatCohere, hostile(`{"results":[{"index":0,"relevance_score":1},{"index":7,"relevance_score":0.5}]}`, 200), "index 7, but 2 passages"},
		{"negative index", FormatJina, hostile(`{"results":[{"index":-1,"relevance_score":1},{"index":0,"relevance_score":0.5}]}`, 200), "index -1"},
		{"duplicate", FormatTEI, hostile(`[{"index":0,"score":1},{"index":0,"score":0.5}]`, 200), "scored twice"},
		{"missing entry", FormatCohere, hostile(`{"results":[{"index":1,"relevance_score":1}]}`, 200), "1 of the 2 passages"},
		{"no score", FormatCohere, hostile(`{"results":[{"index":0},{"index":1,"relevance_score":1}]}`, 200), "no index or no score"},
		{"TEI's score name in cohere", FormatCohere, hostile(`{"results":[{"index":0,"score":1},{"index":1,"score":1}]}`, 200), "no index or no score"},
		{"NaN", FormatTEI, hostile(`[{"index":0,"score":NaN},{"index":1,"score":1}]`, 200), "not a TEI rerank answer"},
		{"NaN as a string", FormatTEI, hostile(`[{"index":0,"score":"NaN"},{"index":1,"score":1}]`, 200), "not a TEI rerank answer"},
		{"overflow", FormatCohere, hostile(`{"results":[{"index":0,"relevance_score":1e999},{"index":1,"relevance_score":1}]}`, 200), "not a cohere rerank answer"},
		{"no results", FormatCohere, hostile(`{"id":"x"}`, 200), `no "results"`},
		{"HTML", FormatJina, hostile(`<html>hello</html>`, 200), "not a jina rerank answer"},
		{"TEI answering cohere", FormatCohere, hostile(`[{"index":0,"score":1}]`, 200), "not a cohere rerank answer"},
		{"huge", FormatCohere, hostile(`{"results":[`+strings.Repeat(`{"index":0,"relevance_score":1},`, 200_000)+`]}`, 200), "over 65536 bytes"},
		{"bad request", FormatCohere, hostile(`{"message":"invalid model"}`, 400), "400 Bad Request: {\"message\":\"invalid model\"}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{format: c.format, answer: c.answer}
			r := newReranker(t, Config{URL: serve(t, f), Format: c.format, MaxResponseBytes: 64 << 10})
			_, err := r.Score(context.Background(), "q", []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to say %q", err, c.want)
			}
			if n := f.requests.Load(); n != 1 {
				t.Errorf("%d requests: an answer that is wrong, not failed, is not retried", n)
			}
		})
	}
}

func TestRetriesThen500Fails(t *testing.T) {
	t.Parallel()
	f := &fake{format: FormatCohere, answer: hostile("overloaded", 503)}
	r := newReranker(t, Config{URL: serve(t, f), Retries: 2})
	_, err := r.Score(context.Background(), "q", []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "after 2 retries") {
		t.Fatalf("err = %v", err)
	}
	if n := f.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (one and two retries)", n)
	}
}

func TestRetriesOn429And5xxThenSucceeds(t *testing.T) {
	t.Parallel()
	for _, status := range []int{429, 500, 502} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			f := &fake{format: FormatTEI, answer: func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				if calls.Add(1) <= 2 {
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(status)
					return true
				}
				return false
			}}
			r := newReranker(t, Config{URL: serve(t, f), Format: FormatTEI})
			got, err := r.Score(context.Background(), "hot", []string{"hot tea", "cold"})
			if err != nil {
				t.Fatal(err)
			}
			if got[0] <= got[1] {
				t.Errorf("scores %v", got)
			}
			if n := f.requests.Load(); n != 3 {
				t.Errorf("%d requests, want 3", n)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	f := &fake{format: FormatCohere, answer: func(w http.ResponseWriter, r *http.Request, _ int) bool {
		select { // a server that never answers in time
		case <-release:
		case <-r.Context().Done():
		}
		return true
	}}
	url := serve(t, f)
	defer close(release)
	// Counted as sent: a request that times out may not have reached the
	// server's handler yet.
	sent := &countingTransport{}
	r := newReranker(t, Config{URL: url, Timeout: 20 * time.Millisecond, Retries: 1, Client: &http.Client{Transport: sent}})
	_, err := r.Score(context.Background(), "q", []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "did not answer within 20ms") {
		t.Fatalf("err = %v", err)
	}
	if n := sent.n.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (a timeout is retried)", n)
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	f := &fake{format: FormatCohere, answer: func(w http.ResponseWriter, r *http.Request, _ int) bool {
		w.WriteHeader(401)
		io.WriteString(w, "bad key "+r.Header.Get("Authorization"))
		return true
	}}
	r := newReranker(t, Config{URL: serve(t, f), APIKey: "sekrit-key-123"})
	_, err := r.Score(context.Background(), "q", []string{"a"})
	if err == nil || strings.Contains(err.Error(), "sekrit") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err = %v", err)
	}
}

func TestConnectionRefusedAndCancelled(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/rerank"
	srv.Close()
	r := newReranker(t, Config{URL: url, Retries: 1})
	if _, err := r.Score(context.Background(), "q", []string{"a"}); err == nil || !strings.Contains(err.Error(), "after 1 retries") {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fake{format: FormatCohere}
	r = newReranker(t, Config{URL: serve(t, f)})
	if _, err := r.Score(ctx, "q", []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{}, {URL: "ftp://x"}, {URL: "http://x", Format: "openai"}} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	if d := parseRetryAfter("7"); d != 7*time.Second {
		t.Errorf("7: %v", d)
	}
	if d := parseRetryAfter("soon"); d != 0 {
		t.Errorf("soon: %v", d)
	}
	if d := parseRetryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); d < 59*time.Minute {
		t.Errorf("date: %v", d)
	}
}

type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}
