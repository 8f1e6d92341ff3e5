package management

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// sampleManifest is what a Helix running the spec §15 pair plus one agent and
// one HTTP workflow reports.
func sampleManifest() Manifest {
	return Manifest{
		Name:    "helix",
		Version: "1.0.0",
		Agents: []Agent{{ID: "code-assistant", Type: "llm", Model: "gpt-4o-mini",
			Tools: []string{"search_docs"}, Capabilities: []string{"chat", "tools"}}},
		MCPServers: []MCPServer{
			{ID: "public-tools", Name: "helix-mcp", Transport: "http", Addr: "0.0.0.0:3100",
				Endpoints: []string{"http://0.0.0.0:3100/mcp"}, Tools: []string{"code_assistant", "math_agent", "summarizer"}},
			{ID: "admin-tools", Transport: "sse", Addr: "127.0.0.1:3101",
				Endpoints: []string{"http://127.0.0.1:3101/sse"}, Tools: []string{"admin_tool", "code_assistant"}},
			{ID: "local", Transport: "stdio"},
		},
		HTTPRoutes: []HTTPRoute{{Workflow: "orders", Method: "POST", URI: "http-server://0.0.0.0:8080/orders"},
			{Workflow: "echo", Method: "*", URI: "http-server://127.0.0.1:8081/echo"}},
		Durable: &Durable{Store: "postgres", Executor: "replica-1", Workflows: []string{"orders"}},
	}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func startServer(t *testing.T, o Options) *Server {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Logger == nil {
		o.Logger = quiet()
	}
	s := New(o)
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func TestRoutes(t *testing.T) {
	var mu sync.Mutex
	var readyErr error = errors.New("starting")
	s := startServer(t, Options{
		Manifest: sampleManifest,
		Ready: func() error {
			mu.Lock()
			defer mu.Unlock()
			return readyErr
		},
	})
	base := "http://" + s.Addr()

	resp, body := get(t, base+ManifestPath)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("manifest: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got Manifest
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := sampleManifest()
	if got.ManifestVersion != ManifestVersion || got.Name != want.Name || len(got.MCPServers) != 3 ||
		got.MCPServers[0].Endpoints[0] != "http://127.0.0.1:3100/mcp" || got.MCPServers[0].Addr != "0.0.0.0:3100" || got.HTTPRoutes[0].URI != want.HTTPRoutes[0].URI ||
		got.Agents[0].Model != "gpt-4o-mini" {
		t.Errorf("manifest = %+v", got)
	}
	// Empty lists are arrays, never null.
	if strings.Contains(body, "null") {
		t.Errorf("manifest contains null:\n%s", body)
	}

	if resp, body := get(t, base+"/healthz"); resp.StatusCode != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", resp.StatusCode, body)
	}
	if resp, body := get(t, base+"/readyz"); resp.StatusCode != 503 || body != "not ready: starting\n" {
		t.Errorf("readyz while starting: %d %q", resp.StatusCode, body)
	}
	mu.Lock()
	readyErr = nil
	mu.Unlock()
	if resp, _ := get(t, base+"/readyz"); resp.StatusCode != 200 {
		t.Errorf("readyz when ready: %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/nope"); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}

	// A rebound domain pointing at loopback is refused.
	req := httptest.NewRequest(http.MethodGet, ManifestPath, nil)
	req.Host = "attacker.example:9999"
	rec := httptest.NewRecorder()
	s.handler(true).ServeHTTP(rec, req)
	if rec.Code != 403 {
		t.Errorf("non-loopback Host: %d, want 403", rec.Code)
	}
	for _, h := range []string{"localhost:9999", "127.0.0.1:9999", "[::1]:9999"} {
		req.Host = h
		rec := httptest.NewRecorder()
		s.handler(true).ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("Host %s: %d", h, rec.Code)
		}
	}
}

func TestDefaultsWithoutFuncs(t *testing.T) {
	s := New(Options{Logger: quiet()})
	if s.opts.Addr != DefaultAddr {
		t.Errorf("default addr %q", s.opts.Addr)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != 200 {
		t.Errorf("readyz without Ready func: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ManifestPath, nil))
	validate(t, rec.Body.Bytes())
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d", rec.Code)
	}
}

// A taken address (a second Helix, an example beside another) moves the optional
// server to a free port of the same host, and the INFO line says where it went.
func TestAddressTakenMovesToAFreePort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	var logs strings.Builder
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	opt := New(Options{Addr: ln.Addr().String(), Logger: slog.New(slog.NewTextHandler(w, nil))})
	if err := opt.Start(context.Background()); err != nil {
		t.Fatalf("optional server failed on a taken address: %v", err)
	}
	got := opt.Addr()
	host, port, err := net.SplitHostPort(got)
	if err != nil || host != "127.0.0.1" || got == ln.Addr().String() || port == "0" {
		t.Fatalf("Addr = %q; want another port of 127.0.0.1 than the taken %s", got, ln.Addr())
	}
	resp, err := http.Get("http://" + got + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz on the free port: %v", err)
	}
	resp.Body.Close()
	if err := opt.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
	mu.Lock()
	if !regexp.MustCompile(`level=INFO .*url=http://` + regexp.QuoteMeta(got) + `\b.*taken=` + regexp.QuoteMeta(ln.Addr().String())).MatchString(logs.String()) {
		t.Errorf("no INFO line with the new URL and the taken address:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a server that runs is no warning:\n%s", logs.String())
	}
	mu.Unlock()

	// An address no port of which can be bound (not this host's): a warning, and
	// Helix runs on without management endpoints.
	logs.Reset()
	foreign := New(Options{Addr: "192.0.2.1:9999", Logger: slog.New(slog.NewTextHandler(w, nil))})
	if err := foreign.Start(context.Background()); err != nil {
		t.Fatalf("optional server failed on an address it cannot bind: %v", err)
	}
	if foreign.Addr() != "" {
		t.Errorf("Addr = %q for a server that is not running", foreign.Addr())
	}
	mu.Lock()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "192.0.2.1:9999") {
		t.Errorf("no warning naming the address: %s", logs.String())
	}
	mu.Unlock()

	req := New(Options{Addr: ln.Addr().String(), Required: true, Logger: quiet()})
	err = req.Start(context.Background())
	if err == nil {
		_ = req.Stop(context.Background())
		t.Fatal("required server started on a taken address")
	}
	if !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("error does not name the address: %v", err)
	}
}

func TestStartTwiceAndStop(t *testing.T) {
	s := startServer(t, Options{})
	if err := s.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
	addr := s.Addr()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != "" {
		t.Error("Addr after Stop")
	}
	// The port is released.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("address not released after Stop: %v", err)
	}
	ln.Close()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// validate checks a manifest document against docs/manifest.schema.json.
func validate(t *testing.T, doc []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../docs/manifest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("schema does not parse: %v", err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("schema does not resolve: %v", err)
	}
	var instance any
	if err := json.Unmarshal(doc, &instance); err != nil {
		t.Fatalf("manifest is not JSON: %v", err)
	}
	if err := resolved.Validate(instance); err != nil {
		t.Errorf("manifest does not match the schema: %v\n%s", err, doc)
	}
}

func TestManifestMatchesSchema(t *testing.T) {
	s := startServer(t, Options{Manifest: sampleManifest})
	_, body := get(t, "http://"+s.Addr()+ManifestPath)
	validate(t, []byte(body))
}

// The schema must reject what it promises to reject, or the test above
// proves nothing.
func TestSchemaRejectsBadManifests(t *testing.T) {
	raw, _ := os.ReadFile("../../docs/manifest.schema.json")
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(sampleManifest().normalized())
	bad := map[string]func(map[string]any){
		"missing mcp_servers": func(m map[string]any) { delete(m, "mcp_servers") },
		"unknown field":       func(m map[string]any) { m["extra"] = 1 },
		"durable store URL":   func(m map[string]any) { m["durable"].(map[string]any)["url"] = "postgres://u:p@db/x" },
		"durable store kind":  func(m map[string]any) { m["durable"].(map[string]any)["store"] = "mysql" },
		"bad transport": func(m map[string]any) {
			m["mcp_servers"].([]any)[0].(map[string]any)["transport"] = "carrier-pigeon"
		},
		"endpoint not a URL": func(m map[string]any) {
			m["mcp_servers"].([]any)[0].(map[string]any)["endpoints"] = []any{"localhost:3100"}
		},
		"null tools": func(m map[string]any) { m["agents"].([]any)[0].(map[string]any)["tools"] = nil },
		"lower-case method": func(m map[string]any) {
			m["http_routes"].([]any)[0].(map[string]any)["method"] = "post"
		},
	}
	for name, mutate := range bad {
		var m map[string]any
		_ = json.Unmarshal(good, &m)
		mutate(m)
		if err := resolved.Validate(m); err == nil {
			t.Errorf("%s: schema accepted it", name)
		}
	}
	var m map[string]any
	_ = json.Unmarshal(good, &m)
	if err := resolved.Validate(m); err != nil {
		t.Errorf("good manifest rejected: %v", err)
	}
}

// Endpoints on every interface are rewritten with the host the manifest was
// requested by; specific addresses and other fields stay as they are.
func TestReachableEndpoints(t *testing.T) {
	src := Manifest{MCPServers: []MCPServer{
		{ID: "v4", Transport: "http", Addr: "0.0.0.0:3100", Endpoints: []string{"http://0.0.0.0:3100/mcp", "http://0.0.0.0:3100/sse"}},
		{ID: "v6", Transport: "sse", Addr: "[::]:3101", Endpoints: []string{"http://[::]:3101/sse"}},
		{ID: "fixed", Transport: "http", Addr: "10.1.2.3:3102", Endpoints: []string{"http://10.1.2.3:3102/mcp"}},
	}}
	m := src.normalized()
	m.reachableEndpoints("helix.internal:9999")
	got := []string{m.MCPServers[0].Endpoints[0], m.MCPServers[0].Endpoints[1], m.MCPServers[1].Endpoints[0], m.MCPServers[2].Endpoints[0]}
	want := []string{"http://helix.internal:3100/mcp", "http://helix.internal:3100/sse", "http://helix.internal:3101/sse", "http://10.1.2.3:3102/mcp"}
	if strings.Join(got, " ") != strings.Join(want, " ") || m.MCPServers[0].Addr != "0.0.0.0:3100" ||
		src.MCPServers[0].Endpoints[0] != "http://0.0.0.0:3100/mcp" {
		t.Errorf("endpoints %v, want %v (addr %s; the caller's manifest must not change: %v)", got, want, m.MCPServers[0].Addr, src.MCPServers[0].Endpoints)
	}
	m6 := Manifest{MCPServers: []MCPServer{{ID: "a", Transport: "http", Endpoints: []string{"http://0.0.0.0:1/mcp"}}}}.normalized()
	m6.reachableEndpoints("[::1]:9999")
	if m6.MCPServers[0].Endpoints[0] != "http://[::1]:1/mcp" {
		t.Errorf("ipv6 request host: %s", m6.MCPServers[0].Endpoints[0])
	}
}
