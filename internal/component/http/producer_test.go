package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	helixhttp "github.com/arvenza/helix/internal/component/http"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// seen is what the test server received.
type seen struct {
	method, path, query, body string
	header                    http.Header
}

// recordingServer answers every request with the status and JSON in the request's
// X-Reply-Status / X-Reply-Body headers (defaults 200 and {"ok":true}), or sleeps
// until the client gives up on path /slow.
func recordingServer(t *testing.T) (*httptest.Server, func() seen) {
	var mu sync.Mutex
	var last seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Clone()}
		mu.Unlock()
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		if r.URL.Path == "/text" {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "plain words")
			return
		}
		status := 200
		if s := r.Header.Get("X-Reply-Status"); s != "" {
			_ = json.Unmarshal([]byte(s), &status)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", "u1")
		w.WriteHeader(status)
		body := r.Header.Get("X-Reply-Body")
		if body == "" {
			body = `{"ok":true}`
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() seen { mu.Lock(); defer mu.Unlock(); return last }
}

func send(t *testing.T, comp *helixhttp.Component, raw string, ex *exchange.Exchange) error {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ep.CreateProducer()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	return p.Process(context.Background(), ex)
}

func TestRequests(t *testing.T) {
	srv, last := recordingServer(t)
	comp := helixhttp.New(nil)
	defer comp.Stop(context.Background())
	tests := []struct {
		name    string
		uri     string
		body    any
		headers map[string]any
		check   func(t *testing.T, s seen, ex *exchange.Exchange, err error)
	}{
		{"no body is GET", "/users/7", nil, nil, func(t *testing.T, s seen, ex *exchange.Exchange, err error) {
			if err != nil || s.method != "GET" || s.path != "/users/7" || s.body != "" {
				t.Fatalf("err=%v seen=%+v", err, s)
			}
			if m, ok := ex.In().Body().(map[string]any); !ok || m["ok"] != true {
				t.Fatalf("JSON response not decoded: %#v", ex.In().Body())
			}
			if ex.In().Header(exchange.HeaderHTTPResponseCode) != 200 || ex.In().HeaderString("X-Upstream") != "u1" {
				t.Fatalf("response headers not copied: %v", ex.In().Headers())
			}
		}},
		{"map body is JSON POST", "/orders", map[string]any{"id": 1.0}, nil, func(t *testing.T, s seen, _ *exchange.Exchange, err error) {
			if err != nil || s.method != "POST" || s.body != `{"id":1}` || s.header.Get("Content-Type") != "application/json" {
				t.Fatalf("err=%v seen=%+v", err, s)
			}
		}},
		{"string body as is", "/t", "raw text", map[string]any{"Content-Type": "text/csv"}, func(t *testing.T, s seen, _ *exchange.Exchange, err error) {
			if err != nil || s.method != "POST" || s.body != "raw text" || s.header.Get("Content-Type") != "text/csv" {
				t.Fatalf("err=%v seen=%+v", err, s)
			}
		}},
		{"stale text Content-Type does not label JSON", "/t", []any{1.0}, map[string]any{"Content-Type": "text/plain"}, func(t *testing.T, s seen, _ *exchange.Exchange, err error) {
			if err != nil || s.body != `[1]` || s.header.Get("Content-Type") != "application/json" {
				t.Fatalf("err=%v seen=%+v", err, s)
			}
		}},
		{"httpMethod option wins and query options stay", "/items?httpMethod=put&limit=5", map[string]any{}, nil, func(t *testing.T, s seen, _ *exchange.Exchange, err error) {
			if err != nil || s.method != "PUT" || s.query != "limit=5" {
				t.Fatalf("err=%v seen=%+v", err, s)
			}
		}},
		{"inbound HelixHttpMethod is not reused", "/x", nil, map[string]any{"HelixHttpMethod": "DELETE"}, func(t *testing.T, s seen, _ *exchange.Exchange, err error) {
			if err != nil || s.method != "GET" {
				t.Fatalf("err=%v seen=%+v", err, s)
			}
		}},
		{"explicit GET sends no body", "/x?httpMethod=GET", "ignored", nil, func(t *testing.T, s seen, _ *exchange.Exchange, err error) {
			if err != nil || s.method != "GET" || s.body != "" {
				t.Fatalf("err=%v seen=%+v", err, s)
			}
		}},
		{"HTTP-like headers sent, Helix and framing ones not", "/h", nil, map[string]any{
			"Authorization": "Bearer t0k", "X-Trace": 42, "HelixMcpToolName": "secret", "Host": "evil",
			"Accept-Encoding": "br", "Bad Name": "x", "X-Split": "a\r\nInjected: yes",
		}, func(t *testing.T, s seen, _ *exchange.Exchange, err error) {
			if err != nil {
				t.Fatal(err)
			}
			h := s.header
			if h.Get("Authorization") != "Bearer t0k" || h.Get("X-Trace") != "42" {
				t.Fatalf("headers not forwarded: %v", h)
			}
			for _, k := range []string{"Helixmcptoolname", "Injected", "X-Split"} {
				if h.Get(k) != "" {
					t.Fatalf("header %s should not be sent: %v", k, h)
				}
			}
			if h.Get("Accept-Encoding") == "br" {
				t.Fatal("Accept-Encoding from the exchange overrode the transport's")
			}
		}},
		{"non-2xx fails by default, with status and body", "/e", nil, map[string]any{"X-Reply-Status": "501", "X-Reply-Body": `{"error":"not implemented here"}`}, func(t *testing.T, _ seen, ex *exchange.Exchange, err error) {
			var se *helixhttp.StatusError
			if !errors.As(err, &se) || se.StatusCode != 501 || !strings.Contains(err.Error(), "HTTP 501") || !strings.Contains(err.Error(), "not implemented here") {
				t.Fatalf("got %v, want a StatusError 501 with the body", err)
			}
		}},
		{"non-2xx body excerpt is bounded", "/e", nil, map[string]any{"X-Reply-Status": "500", "X-Reply-Body": `"` + strings.Repeat("x", 5000) + `"`}, func(t *testing.T, _ seen, ex *exchange.Exchange, err error) {
			if err == nil || len(err.Error()) > 512+200 || !strings.Contains(err.Error(), "xxxx") {
				t.Fatalf("error of %d bytes, want a bounded excerpt", len(exchange.Stringify(err)))
			}
		}},
		{"throwExceptionOnFailure=false passes the answer on", "/e?throwExceptionOnFailure=false", nil, map[string]any{"X-Reply-Status": "404", "X-Reply-Body": `{"error":"nope"}`}, func(t *testing.T, _ seen, ex *exchange.Exchange, err error) {
			body, _ := ex.In().Body().(map[string]any)
			if err != nil || ex.In().Header(exchange.HeaderHTTPResponseCode) != 404 || body["error"] != "nope" {
				t.Fatalf("err=%v code=%v body=%v", err, ex.In().Header(exchange.HeaderHTTPResponseCode), ex.In().Body())
			}
		}},
		{"throwExceptionOnFailure", "/e?throwExceptionOnFailure=true", nil, map[string]any{"X-Reply-Status": "503", "X-Reply-Body": `{"error":"down"}`}, func(t *testing.T, _ seen, ex *exchange.Exchange, err error) {
			var se *helixhttp.StatusError
			if !errors.As(err, &se) || se.StatusCode != 503 || !strings.Contains(err.Error(), "down") {
				t.Fatalf("got %v, want a StatusError 503", err)
			}
			if ex.In().Header(exchange.HeaderHTTPResponseCode) != 503 {
				t.Fatal("the failed response is not on the exchange")
			}
		}},
		{"text response stays text, old Content-Type replaced", "/text", nil, map[string]any{"content-type": "application/json"}, func(t *testing.T, _ seen, ex *exchange.Exchange, err error) {
			if err != nil || ex.In().Body() != "plain words" || ex.In().HeaderString("Content-Type") != "text/plain" || ex.In().Header("content-type") != nil {
				t.Fatalf("err=%v body=%#v headers=%v", err, ex.In().Body(), ex.In().Headers())
			}
		}},
		{"invalid JSON response falls back to text", "/j", nil, map[string]any{"X-Reply-Body": "{nope"}, func(t *testing.T, _ seen, ex *exchange.Exchange, err error) {
			if err != nil || ex.In().Body() != "{nope" {
				t.Fatalf("err=%v body=%#v", err, ex.In().Body())
			}
		}},
		{"timeout", "/slow?timeout=100ms", nil, nil, func(t *testing.T, _ seen, _ *exchange.Exchange, err error) {
			if err == nil || !strings.Contains(err.Error(), "timed out after 100ms") || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want a timeout error", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := exchange.NewWithBody(exchange.InOut, tc.body)
			for k, v := range tc.headers {
				ex.In().SetHeader(k, v)
			}
			err := send(t, comp, srv.URL+tc.uri, ex)
			tc.check(t, last(), ex, err)
		})
	}
}

func TestBridgeEndpoint(t *testing.T) {
	srv, last := recordingServer(t)
	comp := helixhttp.New(nil)
	defer comp.Stop(context.Background())
	const bridge = "http://dynamic?bridgeEndpoint=true"

	// spec §12.2 check-health: the body {"url": …} describes a GET.
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"url": srv.URL + "/health"})
	if err := send(t, comp, bridge, ex); err != nil {
		t.Fatal(err)
	}
	if s := last(); s.method != "GET" || s.path != "/health" || s.body != "" {
		t.Fatalf("seen %+v", s)
	}
	if ex.In().Header(exchange.HeaderHTTPResponseCode) != 200 {
		t.Fatal("no response code")
	}

	// A descriptor with method, headers and body.
	ex = exchange.NewWithBody(exchange.InOut, map[string]any{
		"url": srv.URL + "/d", "method": "patch", "headers": map[string]any{"X-From-Body": "b"}, "body": map[string]any{"a": 1.0},
	})
	if err := send(t, comp, bridge, ex); err != nil {
		t.Fatal(err)
	}
	if s := last(); s.method != "PATCH" || s.body != `{"a":1}` || s.header.Get("X-From-Body") != "b" {
		t.Fatalf("seen %+v", s)
	}

	// The header wins and the body is the request body.
	ex = exchange.NewWithBody(exchange.InOut, "payload")
	ex.In().SetHeader(helixhttp.HeaderHTTPURI, srv.URL+"/from-header")
	if err := send(t, comp, bridge, ex); err != nil {
		t.Fatal(err)
	}
	if s := last(); s.method != "POST" || s.path != "/from-header" || s.body != "payload" {
		t.Fatalf("seen %+v", s)
	}

	for _, body := range []any{"no url", map[string]any{"url": "ftp://x/y"}, map[string]any{"url": 3}} {
		err := send(t, comp, bridge, exchange.NewWithBody(exchange.InOut, body))
		if err == nil {
			t.Errorf("body %v: want an error", body)
		}
	}
}

func TestCancelIsNotReportedAsTimeout(t *testing.T) {
	srv, _ := recordingServer(t)
	comp := helixhttp.New(nil)
	defer comp.Stop(context.Background())
	u, _ := uri.Parse(srv.URL + "/slow")
	ep, _ := comp.CreateEndpoint(u)
	p, _ := ep.CreateProducer()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := p.Process(ctx, exchange.New(exchange.InOut))
	if err == nil || strings.Contains(err.Error(), "option timeout") {
		t.Fatalf("got %v, want the caller's deadline, not the endpoint timeout, to be named", err)
	}
}

func TestBadEndpoints(t *testing.T) {
	for _, raw := range []string{
		"http://h?timeout=soon", "http://h?timeout=0s", "http://h?throwExceptionOnFailure=maybe",
		"http://h?httpMethod=GE%20T", "http://h?maxResponseBytes=-1", "http:///path",
	} {
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := helixhttp.New(nil).CreateEndpoint(u); err == nil {
			t.Errorf("%s: want an error", raw)
		}
	}
}

func TestHeaderHelpers(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "application/problem+json": true,
		"text/plain": false, "": false, "application/jsonx": false,
	} {
		if helixhttp.IsJSON(ct) != want {
			t.Errorf("IsJSON(%q) != %v", ct, want)
		}
	}
	for name, want := range map[string]bool{
		"Authorization": true, "x-custom": true, "HelixHttpMethod": false, "helixfoo": false,
		"Content-Length": false, "connection": false, "bad name": false, "": false,
	} {
		if helixhttp.OutboundHeader(name) != want {
			t.Errorf("OutboundHeader(%q) != %v", name, want)
		}
	}
}
