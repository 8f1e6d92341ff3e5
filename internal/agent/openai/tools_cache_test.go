package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/agent"
)

// chatServer answers every Chat Completions request with "done" and keeps the
// request bodies.
type chatServer struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
}

// requestTools returns the tools of a captured request, re-encoded so that key
// order does not matter.
func requestTools(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var v any
	if len(req.Tools) > 0 {
		if err := json.Unmarshal(req.Tools, &v); err != nil {
			t.Fatal(err)
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func newTestModel(t *testing.T) (*Model, *chatServer) {
	t.Helper()
	srv := &chatServer{}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	m, err := New(Config{Model: "m", APIKey: "k", BaseURL: ts.URL, HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func generate(t *testing.T, m *Model, tools []agent.ToolDef) {
	t.Helper()
	_, err := m.Generate(context.Background(), &agent.ModelRequest{
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
}

// The tool set is converted once and reused, yet every request carries exactly
// the tools it was given: the same set again, a set changed in place, another
// set, none.
func TestGenerateToolsReusedOnlyWhenUnchanged(t *testing.T) {
	m, srv := newTestModel(t)
	schema := []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	tools := []agent.ToolDef{{Name: "echo", Description: "echoes", InputSchema: schema}, {Name: "bare", InputSchema: []byte(`{"type":"object"}`)}}
	want := func(prop string) string {
		return `[{"function":{"description":"echoes","name":"echo","parameters":{"properties":{"` + prop + `":{"type":"string"}},"type":"object"}},"type":"function"},` +
			`{"function":{"description":"","name":"bare","parameters":{"type":"object"}},"type":"function"}]`
	}
	generate(t, m, tools)
	generate(t, m, tools)
	copy(schema[bytes.Index(schema, []byte(`"a"`)):], `"b"`) // the caller's bytes, changed in place
	generate(t, m, tools)
	generate(t, m, tools[1:])
	generate(t, m, nil)
	wants := []string{want("a"), want("a"), want("b"), `[{"function":{"description":"","name":"bare","parameters":{"type":"object"}},"type":"function"}]`, "null"}
	if len(srv.bodies) != len(wants) {
		t.Fatalf("%d requests, want %d", len(srv.bodies), len(wants))
	}
	for i, w := range wants {
		if got := requestTools(t, srv.bodies[i]); got != w {
			t.Errorf("request %d: tools\n %s\nwant\n %s", i+1, got, w)
		}
	}
}

func TestGenerateBadToolSchemaFailsEveryTime(t *testing.T) {
	m, srv := newTestModel(t)
	tools := []agent.ToolDef{{Name: "broken", InputSchema: []byte(`{"type":`)}}
	for range 2 {
		_, err := m.Generate(context.Background(), &agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}, Tools: tools})
		if err == nil || !strings.Contains(err.Error(), "tool broken: input schema") {
			t.Fatalf("err %v, want the tool's schema error", err)
		}
	}
	if len(srv.bodies) != 0 {
		t.Fatalf("%d requests sent with a broken schema", len(srv.bodies))
	}
}

// Concurrent requests share the converted tools (run with -race).
func TestGenerateToolsConcurrent(t *testing.T) {
	m, srv := newTestModel(t)
	tools := []agent.ToolDef{{Name: "echo", InputSchema: []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := m.Generate(context.Background(), &agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}, Tools: tools})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	first := requestTools(t, srv.bodies[0])
	for i, b := range srv.bodies {
		if got := requestTools(t, b); got != first {
			t.Errorf("request %d: tools %s, want %s", i+1, got, first)
		}
	}
}
