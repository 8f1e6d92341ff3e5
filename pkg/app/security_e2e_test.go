package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

// fourWorkflows are the spec §15 tools as plain workflows.
const fourWorkflows = `
workflows:
  - id: code-assistant
    description: "Answer coding questions"
    trigger: direct://code-assistant
    steps:
      - transform:
          starlang: |
            "code: " ++ str(payload.get("q", ""))
  - id: math-agent
    description: "Do sums"
    trigger: direct://math-agent
    steps:
      - transform:
          starlang: |
            str(payload.get("a", 0) + payload.get("b", 0))
  - id: summarizer
    description: "Summarize a text"
    trigger: direct://summarizer
    steps:
      - transform:
          starlang: |
            str(payload.get("text", ""))[:10]
  - id: admin-tool
    description: "Administrative operations"
    trigger: direct://admin-tool
    steps:
      - transform:
          starlang: |
            "admin done"
`

// secureYAML is the spec §15 public/admin pair verbatim (ports aside; the admin key
// comes from the environment), plus servers that isolate one feature each.
const secureYAML = `
helix:
  name: secure-e2e
  management:
    addr: "127.0.0.1:0"
` + fourWorkflows + `
  - id: orders-http
    trigger: http-server://127.0.0.1:0/orders?httpMethod=POST
    steps:
      - target: direct://code-assistant
  - id: echo-http
    trigger: http-server://127.0.0.1:0/echo
    steps: []
mcps:
  # Public: exposed to all clients
  - id: public-tools
    addr: "127.0.0.1:0"
    expose: [code-assistant, math-agent, summarizer]
    api_keys: [mcp-public-key]
    rate_limit: 120

  # Admin: restricted access, separate key
  - id: admin-tools
    addr: "127.0.0.1:0"
    expose: [admin-tool, code-assistant]
    api_keys: ["${env:HELIX_E2E_ADMIN_KEY}"]
    rate_limit: 30
    blocked_tools: [summarizer]

  # A gateway on this host forwards without a key.
  - id: gateway
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    api_keys: [gw-key]
    trusted_proxies: ["127.0.0.1", "::1"]

  # Reached directly by browsers and scripts; the gateway network is elsewhere.
  - id: edge
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    api_keys: [edge-key]
    trusted_proxies: ["10.0.0.0/8"]
    cors_origins: ["http://localhost:3000", "http://localhost:5173"]
    max_body_bytes: 2048

  # No keys: clients are told apart by address only.
  - id: open-limited
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    stateless: true
    rate_limit: 3
    trusted_proxies: ["10.0.0.0/8"]

  - id: limited
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    stateless: true
    api_keys: [key-a, key-b]
    rate_limit: 60

  - id: filtered
    addr: "127.0.0.1:0"
    expose: [code-assistant, math-agent, summarizer]
    allowed_tools: [code-assistant, summarizer]
    blocked_tools: [summarizer]

  # Bodies above the go-sdk's own 4 MiB default must reach the tools.
  - id: big
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    max_body_bytes: 8388608
  - id: unlimited
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    max_body_bytes: -1
`

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
const pingBody = `{"jsonrpc":"2.0","id":2,"method":"ping"}`

// startSecure builds yaml, starts it and stops it when the test ends.
func startSecure(t *testing.T, yaml string, logs io.Writer) *app.App {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if logs == nil {
		logs = io.Discard
	}
	a, err := app.Build(cfg, app.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Version: "9.8.7"})
	if err != nil {
		t.Fatal(err)
	}
	return startBuilt(t, a)
}

func serverURL(t *testing.T, a *app.App, id string) string {
	t.Helper()
	addr := a.MCPServers().Addr(id)
	if addr == nil {
		t.Fatalf("server %s is not listening", id)
	}
	return "http://" + addr.String()
}

// rawClient sends raw HTTP requests; one per test so its connections close with it.
type rawClient struct {
	t *testing.T
	c *http.Client
}

func newRawClient(t *testing.T) *rawClient {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawClient{t: t, c: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// do sends method url with headers (key, value pairs) and body, and returns the
// response with its body read.
func (rc *rawClient) do(method, url string, body io.Reader, kv ...string) (*http.Response, string) {
	rc.t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		rc.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if strings.EqualFold(kv[i], "Host") {
			req.Host = kv[i+1]
			continue
		}
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := rc.c.Do(req)
	if err != nil {
		rc.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (rc *rawClient) post(url, body string, kv ...string) (*http.Response, string) {
	rc.t.Helper()
	return rc.do(http.MethodPost, url, strings.NewReader(body), kv...)
}

// headerTransport adds fixed headers to every request of a go-sdk client.
type headerTransport struct {
	h    http.Header
	base *http.Transport
}

func (ht headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range ht.h {
		r.Header[k] = v
	}
	return ht.base.RoundTrip(r)
}

// sdkSession connects a real go-sdk client over Streamable HTTP, sending header.
func sdkSession(t *testing.T, endpoint string, header http.Header) (*sdk.ClientSession, error) {
	t.Helper()
	return sdkSessionVersion(t, endpoint, header, "")
}

// sdkSessionVersion is sdkSession asking for a protocol version ("" = the newest).
func sdkSessionVersion(t *testing.T, endpoint string, header http.Header, version string) (*sdk.ClientSession, error) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: headerTransport{h: header, base: base}}, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

func listedNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (text string, isError bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, ""), res.IsError
}

// callRefused calls a tool the caller may not call and checks that the answer is
// the go-sdk's unknown-tool error.
func callRefused(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		return fmt.Errorf("answered %+v, want the unknown-tool error", res)
	}
	if want := fmt.Sprintf("unknown tool %q", tool); !strings.Contains(err.Error(), want) {
		return fmt.Errorf("error %v, want %s", err, want)
	}
	return nil
}

func TestSecurityEndToEnd(t *testing.T) {
	t.Setenv("HELIX_E2E_ADMIN_KEY", "mcp-admin-key")
	logs := &testtools.SyncBuffer{}
	a := startSecure(t, secureYAML, logs)
	rc := newRawClient(t)
	public := serverURL(t, a, "public-tools") + "/mcp"
	admin := serverURL(t, a, "admin-tools") + "/mcp"

	t.Run("authentication", func(t *testing.T) {
		for _, tc := range []struct {
			name, url string
			kv        []string
			want      int
		}{
			{"no key", public, nil, 401},
			{"wrong key", public, []string{"Authorization", "Bearer wrong-key"}, 401},
			{"wrong X-API-Key", public, []string{"X-API-Key", "wrong-key"}, 401},
			{"public key on admin", admin, []string{"Authorization", "Bearer mcp-public-key"}, 401},
			{"admin key on public", public, []string{"X-API-Key", "mcp-admin-key"}, 401},
			{"bearer", public, []string{"Authorization", "Bearer mcp-public-key"}, 200},
			{"lower-case bearer scheme", public, []string{"Authorization", "bearer mcp-public-key"}, 200},
			{"X-API-Key", public, []string{"X-API-Key", "mcp-public-key"}, 200},
			{"admin key from ${env:}", admin, []string{"X-API-Key", "mcp-admin-key"}, 200},
		} {
			resp, body := rc.post(tc.url, initBody, tc.kv...)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: %d %q, want %d", tc.name, resp.StatusCode, body, tc.want)
			}
			if tc.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer realm="helix-mcp"`) {
				t.Errorf("%s: WWW-Authenticate %q", tc.name, resp.Header.Get("WWW-Authenticate"))
			}
		}
	})

	t.Run("go-sdk client with Bearer and X-API-Key", func(t *testing.T) {
		if _, err := sdkSession(t, public, http.Header{"Authorization": {"Bearer mcp-admin-key"}}); err == nil {
			t.Fatal("connected to the public server with the admin key")
		}
		pub, err := sdkSession(t, public, http.Header{"Authorization": {"Bearer mcp-public-key"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(listedNames(t, pub), ","); got != "code_assistant,math_agent,summarizer" {
			t.Errorf("public tools: %s", got)
		}
		if text, isErr := call(t, pub, "math_agent", map[string]any{"a": 2, "b": 3}); isErr || text != "5" {
			t.Errorf("math_agent: %q isError=%v", text, isErr)
		}
		adm, err := sdkSession(t, admin, http.Header{"X-Api-Key": {"mcp-admin-key"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(listedNames(t, adm), ","); got != "admin_tool,code_assistant" {
			t.Errorf("admin tools: %s", got)
		}
		if text, isErr := call(t, adm, "admin_tool", nil); isErr || text != "admin done" {
			t.Errorf("admin_tool: %q isError=%v", text, isErr)
		}
	})

	t.Run("SSE transport", func(t *testing.T) {
		connect := func(header http.Header) (*sdk.ClientSession, error) {
			base := &http.Transport{}
			t.Cleanup(base.CloseIdleConnections)
			// The SSE stream lives on the Connect context: keep it until the end.
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-sse", Version: "1"}, nil).Connect(ctx,
				&sdk.SSEClientTransport{Endpoint: serverURL(t, a, "admin-tools") + "/sse",
					HTTPClient: &http.Client{Transport: headerTransport{h: header, base: base}}}, nil)
			if err == nil {
				t.Cleanup(func() { _ = cs.Close() })
			}
			return cs, err
		}
		if _, err := connect(http.Header{"X-Api-Key": {"mcp-public-key"}}); err == nil {
			t.Fatal("SSE connected with the public key")
		}
		cs, err := connect(http.Header{"X-Api-Key": {"mcp-admin-key"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(listedNames(t, cs), ","); got != "admin_tool,code_assistant" {
			t.Errorf("admin tools over SSE: %s", got)
		}
		if text, isErr := call(t, cs, "code_assistant", map[string]any{"q": "sse"}); isErr || text != "code: sse" {
			t.Errorf("code_assistant over SSE: %q isError=%v", text, isErr)
		}
	})

	t.Run("trusted proxy", func(t *testing.T) {
		gw := serverURL(t, a, "gateway") + "/mcp"
		if resp, body := rc.post(gw, initBody); resp.StatusCode != 200 {
			t.Errorf("trusted proxy without key: %d %q", resp.StatusCode, body)
		}
		// A reverse proxy forwards the public Host to a loopback listener; the
		// DNS-rebinding guard exempts trusted proxies (and the go-sdk's own check is
		// left to the stack).
		if resp, body := rc.post(gw, initBody, "Host", "mcp.example.com"); resp.StatusCode != 200 {
			t.Errorf("trusted proxy with public Host: %d %q", resp.StatusCode, body)
		}
		edge := serverURL(t, a, "edge") + "/mcp"
		if resp, _ := rc.post(edge, initBody, "X-API-Key", "edge-key", "Host", "rebound.example.com"); resp.StatusCode != 403 {
			t.Errorf("untrusted client with a non-loopback Host: %d, want 403", resp.StatusCode)
		}
	})

	t.Run("spoofed X-Forwarded-For", func(t *testing.T) {
		edge := serverURL(t, a, "edge") + "/mcp"
		// 10.0.0.0/8 is trusted, but the request comes from 127.0.0.1: the header
		// is the client's own claim.
		if resp, _ := rc.post(edge, initBody, "X-Forwarded-For", "10.1.2.3"); resp.StatusCode != 401 {
			t.Errorf("spoofed proxy address bypassed auth: %d", resp.StatusCode)
		}
		// Without keys the bucket is the address; a fresh forged address per
		// request must not mint fresh buckets. Burst 3, one token per 20 s.
		open := serverURL(t, a, "open-limited") + "/mcp"
		start := time.Now()
		ok := 0
		limited := false
		for i := range 10 {
			resp, body := rc.post(open, pingBody, "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
			if resp.StatusCode == 429 {
				limited = true
				break
			}
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %d %q", i+1, resp.StatusCode, body)
			}
			ok++
		}
		refills := int(time.Since(start) / (20 * time.Second))
		if !limited || ok > 3+refills {
			t.Errorf("%d requests with forged addresses passed a limit of 3/min (limited=%v)", ok, limited)
		}
	})

	t.Run("body limit", func(t *testing.T) {
		edge := serverURL(t, a, "edge") + "/mcp"
		big := padded(4096)
		if resp, _ := rc.post(edge, big, "X-API-Key", "edge-key"); resp.StatusCode != 413 {
			t.Errorf("declared oversize body: %d, want 413", resp.StatusCode)
		}
		// Without Content-Length (chunked) the limit applies while reading.
		resp, _ := rc.do(http.MethodPost, edge, io.MultiReader(strings.NewReader(big)), "X-API-Key", "edge-key")
		if resp.StatusCode != 413 {
			t.Errorf("chunked oversize body: %d, want 413", resp.StatusCode)
		}
		if resp, body := rc.post(edge, padded(1500), "X-API-Key", "edge-key"); resp.StatusCode != 200 {
			t.Errorf("body under the limit: %d %q", resp.StatusCode, body)
		}
		// 5 MiB is above the go-sdk's default limit: the configured limit (or none)
		// is handed to the SDK.
		five := padded(5 << 20)
		for _, id := range []string{"big", "unlimited"} {
			if resp, body := rc.post(serverURL(t, a, id)+"/mcp", five); resp.StatusCode != 200 {
				t.Errorf("%s: 5 MiB body: %d %.200q", id, resp.StatusCode, body)
			}
		}
	})

	t.Run("CORS", func(t *testing.T) {
		edge := serverURL(t, a, "edge") + "/mcp"
		resp, _ := rc.do(http.MethodOptions, edge, nil, "Origin", "http://evil.example",
			"Access-Control-Request-Method", "POST")
		if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from an unlisted origin: %d %v", resp.StatusCode, resp.Header)
		}
		resp, _ = rc.do(http.MethodOptions, edge, nil, "Origin", "http://localhost:5173",
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
		h := resp.Header
		if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Errorf("preflight from a listed origin: %d %v", resp.StatusCode, h)
		}
		resp, body := rc.post(edge, initBody, "Origin", "http://localhost:3000", "X-API-Key", "edge-key")
		h = resp.Header
		if resp.StatusCode != 200 || h.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
			!strings.Contains(h.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") || h.Get("Mcp-Session-Id") == "" {
			t.Errorf("actual request from a listed origin: %d %q %v", resp.StatusCode, body, h)
		}
		// A "simple" cross-site POST skips the preflight; it is refused too.
		if resp, _ := rc.post(edge, initBody, "Origin", "http://evil.example", "X-API-Key", "edge-key"); resp.StatusCode != 403 {
			t.Errorf("actual request from an unlisted origin: %d", resp.StatusCode)
		}
	})

	t.Run("rate limit per key", func(t *testing.T) {
		limited := serverURL(t, a, "limited") + "/mcp"
		// 60 per minute, burst 60: the bucket refills one token per second, so the
		// number admitted before the first 429 is 60 plus the seconds elapsed.
		start := time.Now()
		ok := 0
		var refused *http.Response
		for ok <= 200 {
			resp, body := rc.post(limited, pingBody, "X-API-Key", "key-a")
			if resp.StatusCode == 429 {
				refused = resp
				break
			}
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %d %q", ok+1, resp.StatusCode, body)
			}
			ok++
		}
		elapsed := int(time.Since(start)/time.Second) + 1
		if refused == nil || ok < 60 || ok > 60+elapsed {
			t.Fatalf("admitted %d requests in %ds before a 429 (want 60..%d)", ok, elapsed, 60+elapsed)
		}
		if refused.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After: %v", refused.Header)
		}
		if resp, body := rc.post(limited, pingBody, "Authorization", "Bearer key-b"); resp.StatusCode != 200 {
			t.Errorf("another key is limited too: %d %q", resp.StatusCode, body)
		}
	})

	t.Run("tool filtering", func(t *testing.T) {
		cs, err := sdkSession(t, serverURL(t, a, "filtered")+"/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		// summarizer is in both lists (blocked wins); math-agent is not allowed.
		if got := strings.Join(listedNames(t, cs), ","); got != "code_assistant" {
			t.Errorf("filtered tools: %s", got)
		}
		// Refused tools answer like tools that do not exist (no oracle).
		if err := callRefused(t, cs, "summarizer", map[string]any{"text": "long text"}); err != nil {
			t.Errorf("blocked call: %v", err)
		}
		if err := callRefused(t, cs, "math_agent", nil); err != nil {
			t.Errorf("not-allowed call: %v", err)
		}
		if text, isErr := call(t, cs, "code_assistant", map[string]any{"q": "go"}); isErr || text != "code: go" {
			t.Errorf("allowed call: %q isError=%v", text, isErr)
		}
	})

	t.Run("manifest", func(t *testing.T) {
		maddr := a.ManagementAddr()
		if maddr == "" {
			t.Fatal("management server not running")
		}
		base := "http://" + maddr
		resp, body := rc.do(http.MethodGet, base+management.ManifestPath, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("manifest: %d %s", resp.StatusCode, body)
		}
		validateManifest(t, []byte(body))
		var m management.Manifest
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		if m.Name != "secure-e2e" || m.Version != "9.8.7" || m.Agents == nil || len(m.Agents) != 0 {
			t.Errorf("name/version/agents: %q %q %v", m.Name, m.Version, m.Agents)
		}
		servers := map[string]management.MCPServer{}
		for _, s := range m.MCPServers {
			servers[s.ID] = s
		}
		adm := servers["admin-tools"]
		admAddr := a.MCPServers().Addr("admin-tools").String()
		if adm.Transport != "http" || adm.Addr != admAddr ||
			strings.Join(adm.Endpoints, " ") != "http://"+admAddr+"/mcp http://"+admAddr+"/sse" ||
			strings.Join(adm.Tools, ",") != "admin_tool,code_assistant" {
			t.Errorf("admin-tools: %+v", adm)
		}
		if got := strings.Join(servers["public-tools"].Tools, ","); got != "code_assistant,math_agent,summarizer" {
			t.Errorf("public-tools tools: %s", got)
		}
		if got := strings.Join(servers["filtered"].Tools, ","); got != "code_assistant" {
			t.Errorf("filtered tools (after allowed/blocked): %s", got)
		}
		if len(m.MCPServers) != 9 {
			t.Errorf("%d servers, want 9", len(m.MCPServers))
		}
		routes := fmt.Sprint(m.HTTPRoutes)
		if routes != "[{echo-http * http-server://127.0.0.1:0/echo} {orders-http POST http-server://127.0.0.1:0/orders?httpMethod=POST}]" {
			t.Errorf("routes %s", routes)
		}
		if resp, body := rc.do(http.MethodGet, base+"/healthz", nil); resp.StatusCode != 200 || body != "ok\n" {
			t.Errorf("healthz: %d %q", resp.StatusCode, body)
		}
		if resp, body := rc.do(http.MethodGet, base+"/readyz", nil); resp.StatusCode != 200 || body != "ready\n" {
			t.Errorf("readyz: %d %q", resp.StatusCode, body)
		}
	})

	// Rejections are logged with reasons, never with the credentials.
	out := logs.String()
	if !strings.Contains(out, "mcp request rejected") {
		t.Errorf("no rejection logged:\n%.2000s", out)
	}
	for _, secret := range []string{"mcp-public-key", "mcp-admin-key", "wrong-key", "edge-key", "key-a"} {
		if strings.Contains(out, secret) {
			t.Errorf("logs contain the key %q", secret)
		}
	}
}

// padded is an initialize request of about n bytes (the padding sits in an
// experimental capability, which servers ignore).
func padded(n int) string {
	pad := n - len(initBody) - 40
	if pad < 0 {
		pad = 0
	}
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"experimental":{"pad":{"x":"` +
		strings.Repeat("x", pad) + `"}}},"clientInfo":{"name":"raw","version":"1"}}}`
}

func validateManifest(t *testing.T, doc []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../docs/manifest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var instance map[string]any
	if err := json.Unmarshal(doc, &instance); err != nil {
		t.Fatalf("manifest is not JSON: %v", err)
	}
	if err := resolved.Validate(instance); err != nil {
		t.Errorf("manifest does not match docs/manifest.schema.json: %v\n%s", err, doc)
	}
}

// examples/mcp-secure.yaml runs as documented: each server takes only its own key,
// and its workflows answer.
func TestMCPSecureExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../examples/mcp-secure.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for _, addr := range []string{`"127.0.0.1:${env:MCP_SECURE_PUBLIC_PORT:-3100}"`, `"127.0.0.1:${env:MCP_SECURE_ADMIN_PORT:-3101}"`, `"127.0.0.1:${env:MCP_SECURE_MANAGEMENT_PORT:-9901}"`} {
		if !strings.Contains(text, addr) {
			t.Fatalf("examples/mcp-secure.yaml no longer contains %s; update this test", addr)
		}
		text = strings.Replace(text, addr, `"127.0.0.1:0"`, 1)
	}
	a := startSecure(t, text, nil)
	public := serverURL(t, a, "public-tools") + "/mcp"
	admin := serverURL(t, a, "admin-tools") + "/mcp"
	rc := newRawClient(t)
	if resp, _ := rc.post(admin, initBody); resp.StatusCode != 401 {
		t.Errorf("admin without key: %d", resp.StatusCode)
	}
	if resp, _ := rc.post(admin, initBody, "Authorization", "Bearer mcp-public-key"); resp.StatusCode != 401 {
		t.Errorf("admin with the public key: %d", resp.StatusCode)
	}
	cs, err := sdkSession(t, public, http.Header{"Authorization": {"Bearer mcp-public-key"}})
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]string{"code_assistant": "2 lines of code", "math_agent": "5", "summarizer": "First"} {
		args := map[string]any{"code": "a\nb", "a": 2, "b": 3, "text": "First. Second."}
		if text, isErr := call(t, cs, tool, args); isErr || text != want {
			t.Errorf("%s: %q isError=%v, want %q", tool, text, isErr, want)
		}
	}
	adm, err := sdkSession(t, admin, http.Header{"X-Api-Key": {"mcp-admin-key"}})
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, adm, "admin_tool", nil); isErr || text != "all systems nominal" {
		t.Errorf("admin_tool: %q isError=%v", text, isErr)
	}
	if a.ManagementAddr() == "" {
		t.Error("the example's management server is not running")
	}
}
