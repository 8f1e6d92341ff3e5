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

	sdk "github.com/openai/openai-go/v3"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
// The environment's options count as they do for the SDK.
func TestRequestAsSDKSendsIt(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "org-1")
	t.Setenv("OPENAI_PROJECT_ID", "proj-1")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Team: agents\nX-Cost-Center: 42")
	srv, ts := startHeaderServer(t, "application/json", benchResponse)
	m, err := New(Config{Model: "m", APIKey: "sk-1", BaseURL: ts.URL + "/v1", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	p, _ := sdkParams(m.cfg, hi, false)
	sdkClient := sdk.NewClient(clientOptions(m.cfg)...)
	if _, err := sdkClient.Chat.Completions.New(context.Background(), p); err != nil {
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
	if got.Get("Authorization") != "Bearer sk-1" || got.Get("Content-Type") != "application/json" || got.Get("X-Stainless-Lang") != "go" ||
		got.Get("OpenAI-Organization") != "org-1" || got.Get("OpenAI-Project") != "proj-1" || got.Get("X-Cost-Center") != "42" {
		t.Fatalf("headers %v", got)
	}
}

// A base URL that does not parse fails New, without quoting it (it may hold
// credentials).
func TestBadBaseURL(t *testing.T) {
	_, err := New(Config{Model: "m", BaseURL: "http://user:SECRET@host:port/v1"})
	if err == nil || !strings.HasPrefix(err.Error(), "openai: base URL: ") || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("err %v", err)
	}
}

// The base URL may come from the environment, as for the SDK.
func TestBaseURLFromEnvironment(t *testing.T) {
	srv, ts := startHeaderServer(t, "application/json", benchResponse)
	t.Setenv("OPENAI_BASE_URL", ts.URL+"/env/v1")
	m, err := New(Config{Model: "m", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	if srv.paths[0] != "POST /env/v1/chat/completions" {
		t.Fatalf("requests %v", srv.paths)
	}
}

// A redirect to another origin than the base URL's is refused before anything
// (the API key above all) is sent there; one within the origin is followed.
func TestRedirectsStayWithinTheOrigin(t *testing.T) {
	other, ots := startHeaderServer(t, "application/json", benchResponse)
	var target string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved/chat/completions" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, benchResponse)
			return
		}
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(ts.Close)
	m, err := New(Config{Model: "m", APIKey: "sk-SECRET", BaseURL: ts.URL + "/v1", HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	target = ots.URL + "/v1/chat/completions"
	_, err = m.Generate(context.Background(), hi)
	if err == nil || !strings.Contains(err.Error(), "not the origin of the base URL") || len(other.headers) != 0 {
		t.Fatalf("err %v, %d requests at the other origin", err, len(other.headers))
	}
	target = ts.URL + "/moved/chat/completions"
	if res, err := m.Generate(context.Background(), hi); err != nil || len(res.Message.ToolCalls) != 1 {
		t.Fatalf("same-origin redirect: %+v, %v", res, err)
	}
}

// A traced model call carries its span's traceparent to the model server.
func TestTraceparentSent(t *testing.T) {
	srv, ts := startHeaderServer(t, "application/json", benchResponse)
	m, err := New(Config{Model: "m", BaseURL: ts.URL, HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "run")
	defer span.End()
	if _, err := m.Generate(ctx, hi); err != nil {
		t.Fatal(err)
	}
	if got := srv.headers[0].Get("Traceparent"); !strings.Contains(got, span.SpanContext().TraceID().String()) {
		t.Fatalf("traceparent %q, want the trace %s", got, span.SpanContext().TraceID())
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
	sdkClient := sdk.NewClient(clientOptions(m.cfg)...)
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := sdkParamsWith(m.cfg, req, false, tools)
			if err != nil {
				b.Fatal(err)
			}
			c, err := sdkClient.Chat.Completions.New(context.Background(), p)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := response(c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSDKRequest isolates what sending costs per request on a transport that
// answers in process: the SDK's Post of an encoded body (its options, headers,
// request copies, origin checks, middleware), the provider's sender, and a bare
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
	sdkClient := sdk.NewClient(clientOptions(m.cfg)...)
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var res *http.Response
			if err := sdkClient.Post(ctx, chatPath, body, &res); err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
	})
	b.Run("sender", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := m.send.post(ctx, body, m.cfg.APIKey)
			if err != nil {
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
