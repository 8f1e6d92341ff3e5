package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/arvenza/helix/internal/agent"
)

// headerServer answers every request with body as contentType and keeps the
// requests' headers.
type headerServer struct {
	contentType, body string

	mu      sync.Mutex
	headers []http.Header
	paths   []string
}

func (s *headerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	w.Header().Set("Content-Type", s.contentType)
	_, _ = io.WriteString(w, s.body)
}

func startHeaderServer(t *testing.T, contentType, body string) (*headerServer, *httptest.Server) {
	t.Helper()
	s := &headerServer{contentType: contentType, body: body}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

var hi = &agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}}

// The request goes out as the SDK's Chat Completions method sends it: the same
// endpoint and the same headers (authentication, the SDK's own, the
// provider's middleware), only the body is encoded by the provider.
func TestRequestAsSDKSendsIt(t *testing.T) {
	srv, ts := startHeaderServer(t, "application/json", benchResponse)
	m, err := New(Config{Model: "m", APIKey: "sk-1", BaseURL: ts.URL + "/v1", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	p, _ := sdkParams(m.cfg, hi, false)
	if _, err := m.client.Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if len(srv.headers) != 2 || srv.paths[0] != "POST /v1/chat/completions" || srv.paths[1] != srv.paths[0] {
		t.Fatalf("requests %v", srv.paths)
	}
	got, want := srv.headers[0], srv.headers[1]
	got.Del("Content-Length") // the same value, not necessarily the same bytes
	want.Del("Content-Length")
	if !maps.EqualFunc(got, want, func(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }) {
		t.Fatalf("headers\n %v\nthe SDK's\n %v", got, want)
	}
	if got.Get("Authorization") != "Bearer sk-1" || got.Get("Content-Type") != "application/json" || got.Get("X-Stainless-Lang") != "go" {
		t.Fatalf("headers %v", got)
	}
}

// Without an API key no credential is sent, not even an admin key from the
// environment (the SDK's Chat Completions method never sends one; the generic
// Post the provider uses would).
func TestNoAdminKeyFromEnvironment(t *testing.T) {
	t.Setenv("OPENAI_ADMIN_KEY", "sk-admin-SECRET")
	srv, ts := startHeaderServer(t, "application/json", benchResponse)
	m, err := New(Config{Model: "m", BaseURL: ts.URL, HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	if auth := srv.headers[0].Get("Authorization"); auth != "" {
		t.Fatalf("Authorization %q sent", auth)
	}
}

// An answer that is not JSON, or JSON without a completion, is a clear provider
// error; a bare null used to make the provider dereference a nil completion.
func TestUnreadableAnswers(t *testing.T) {
	for _, c := range []struct{ contentType, body, want string }{
		{"text/html; charset=utf-8", "<html>proxy login</html>", `openai: response is not JSON (content type "text/html; charset=utf-8")`},
		{"", benchResponse, `openai: response is not JSON (content type "")`},
		{"application/json", "null", "openai: response has no choices"},
		{"application/json", `{"choices":[{"message":{"content":["a"]}}]}`, "openai: response: choices[0].message.content is an array, not a string"},
		{"application/json", `{"choices":`, "openai: response is not valid JSON"},
	} {
		_, ts := startHeaderServer(t, c.contentType, c.body)
		m, _ := New(Config{Model: "m", APIKey: "k", BaseURL: ts.URL, HTTPClient: ts.Client()})
		_, err := m.Generate(context.Background(), hi)
		var pe *agent.ProviderError
		if !errors.As(err, &pe) || err.Error() != c.want || pe.Retryable() {
			t.Errorf("%s %q: err %v, want %q", c.contentType, c.body, err, c.want)
		}
	}
}

// JSON media types the SDK reads as JSON are read; others are not.
func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		" application/json ;x=y": true, "application/problem+json": true, "application/vnd.api+json; v=1": true,
		"text/plain": false, "": false, "text/event-stream": false, "application/jsonl": true,
	} {
		if got := isJSON(ct); got != want {
			t.Errorf("isJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}

// BenchmarkGenerate is one request through the provider against a local server,
// as in the agent benchmark: the provider's encoding and decoding and the SDK's
// request, against the SDK's params, encoding and decoding.
func BenchmarkGenerate(b *testing.B) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchResponse)
	}))
	defer ts.Close()
	m, err := New(Config{Model: "gpt-4o-mini", APIKey: "k", BaseURL: ts.URL, HTTPClient: ts.Client()})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Generate(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	tools, err := sdkTools(req.Tools)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := sdkParamsWith(m.cfg, req, false, tools)
			if err != nil {
				b.Fatal(err)
			}
			c, err := m.client.Chat.Completions.New(context.Background(), p, option.WithAdminAPIKey(""))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := response(c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// roundTripFunc is a transport answering in process.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkSDKRequest isolates what the SDK's request machinery costs per request
// (options, headers, request copies, origin checks, middleware) on a transport
// that answers in process: the provider's Post of an encoded body against a bare
// http.Client.Do of the same body with the same credential.
func BenchmarkSDKRequest(b *testing.B) {
	answer := func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(benchResponse))}, nil
	}
	hc := &http.Client{Transport: roundTripFunc(answer)}
	m, err := New(Config{Model: "gpt-4o-mini", APIKey: "k", BaseURL: "http://model.test/v1", HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	body, err := m.requestBody(benchRequest(), false)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var res *http.Response
			if err := m.client.Post(ctx, chatPath, body, &res); err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
	})
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://model.test/v1/chat/completions", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer k")
			res, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
	})
}
