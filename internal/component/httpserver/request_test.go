package httpserver_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arvenza/helix/internal/component/httpserver"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// needsJSON is a workflow that can only read a JSON object, like the quickstart's
// greet (payload.get("name")): anything else fails inside the pipeline.
func needsJSON(calls *atomic.Int32) func(context.Context, *exchange.Exchange) error {
	return func(_ context.Context, ex *exchange.Exchange) error {
		calls.Add(1)
		m, ok := ex.In().Body().(map[string]any)
		if !ok {
			return errors.New("string has no .get field or method")
		}
		ex.In().SetBody(map[string]any{"greeting": "Hello, " + exchange.Stringify(m["name"])})
		return nil
	}
}

// A request the workflow cannot read is the client's mistake: 4xx with a plain
// message naming what to send, and the workflow does not run. Not a 500.
func TestUnreadableRequestIs4xx(t *testing.T) {
	comp := httpserver.New(nil)
	var calls atomic.Int32
	base := serve(t, comp, "http-server://127.0.0.1:0/greet?httpMethod=POST&consumes=application/json", needsJSON(&calls))
	client := testClient(t)
	tests := []struct {
		name, ct, body string
		status         int
		msg            string
	}{
		{"curl without -H (form content type)", "application/x-www-form-urlencoded", `{"name":"Ada"}`, 415, "Content-Type: application/json"},
		{"text", "text/plain", `{"name":"Ada"}`, 415, "Content-Type: application/json"},
		{"no content type", "", `{"name":"Ada"}`, 415, "Content-Type: application/json"},
		{"JSON that does not parse", "application/json", `{"name":`, 400, "not valid JSON"},
		{"empty body", "application/json", "", 400, "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, client, "POST", base+"/greet", tc.ct, tc.body)
			if r.status != tc.status || !strings.Contains(r.body, tc.msg) {
				t.Fatalf("status %d %s; want %d mentioning %q", r.status, r.body, tc.status, tc.msg)
			}
			if strings.Contains(r.body, "has no .get") {
				t.Fatalf("the workflow ran on a request it cannot read: %s", r.body)
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("workflow ran %d times", n)
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/vnd.api+json"} {
		if r := do(t, client, "POST", base+"/greet", ct, `{"name":"Ada"}`); r.status != 200 || !strings.Contains(r.body, "Hello, Ada") {
			t.Fatalf("%s: status %d %s", ct, r.status, r.body)
		}
	}
}

// Without consumes=, any content type reaches the workflow, but a body labelled
// JSON that does not parse is still refused: nobody can read it as JSON.
func TestInvalidJSONIs400WithoutConsumes(t *testing.T) {
	comp := httpserver.New(nil)
	var calls atomic.Int32
	base := serve(t, comp, "http-server://127.0.0.1:0/in", needsJSON(&calls))
	r := do(t, testClient(t), "POST", base+"/in", "application/json", `{oops`)
	if r.status != 400 || !strings.Contains(r.body, "not valid JSON") || calls.Load() != 0 {
		t.Fatalf("status %d %s, workflow ran %d times", r.status, r.body, calls.Load())
	}
}

func TestConsumesOption(t *testing.T) {
	comp := httpserver.New(nil)
	for _, raw := range []string{"http-server://h:1/x?consumes=", "http-server://h:1/x?consumes=json"} {
		u, _ := uri.Parse(raw)
		if _, err := comp.CreateEndpoint(u); err == nil {
			t.Errorf("%s: want an error", raw)
		}
	}
	var calls atomic.Int32
	base := serve(t, comp, "http-server://127.0.0.1:0/any?consumes=*/*", needsJSON(&calls))
	if r := do(t, testClient(t), "POST", base+"/any", "text/plain", "x"); r.status != 500 {
		t.Fatalf("consumes=*/* restricts nothing: status %d %s", r.status, r.body)
	}
	base = serve(t, comp, "http-server://127.0.0.1:0/csv?consumes=text/csv,text/plain", func(_ context.Context, ex *exchange.Exchange) error { return nil })
	if r := do(t, testClient(t), "POST", base+"/csv", "text/plain; charset=utf-8", "a,b"); r.status != 200 {
		t.Fatalf("text/plain on a text/csv,text/plain endpoint: %d %s", r.status, r.body)
	}
	if r := do(t, testClient(t), "POST", base+"/csv", "application/json", "{}"); r.status != 415 || !strings.Contains(r.body, "text/csv") {
		t.Fatalf("JSON on a text endpoint: %d %s", r.status, r.body)
	}
}
