package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

type gwArgs struct {
	Text string `json:"text"`
}

// upstreamWithToken is a go-sdk MCP server over HTTP that answers only
// requests carrying token as a bearer token and header X-Team: support.
func upstreamWithToken(t *testing.T, token string) (url string, refused *atomic.Int32) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a gwArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "up:" + a.Text}}}, nil, nil
	})
	// An upstream that quotes the credentials it received, in an error and in a
	// tool error.
	srv.AddTool(&sdk.Tool{Name: "leak", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32050, Message: "you sent " + req.Extra.Header.Get("Authorization")}
	})
	srv.AddTool(&sdk.Tool{Name: "leak_result", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "token " + token + " refused"}}}, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	refused = &atomic.Int32{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("X-Team") != "support" {
			refused.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", refused
}

func TestGatewayFromYAML(t *testing.T) {
	t.Parallel()
	url, refused := upstreamWithToken(t, "up-secret")
	a := startYAML(t, `
workflows:
  - id: greet
    trigger: direct://greet
    steps: []
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    upstreams:
      - id: up
        url: `+url+`
        headers: { X-Team: support }
        auth: { type: bearer, token: up-secret }
    audiences:
      - { path: /mcp/support, tools: ["up.*"] }
`)
	cs := mcpSession(t, a, "gw")
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
	if !slices.Equal(names, []string{"greet", "up.echo", "up.leak", "up.leak_result"}) {
		t.Fatalf("tools = %v", names)
	}
	if text, isErr := callTool(t, cs, "up.echo", map[string]any{"text": "hi"}); text != "up:hi" || isErr {
		t.Fatalf("up.echo = %q %v", text, isErr)
	}
	// The upstream's token never reaches the client.
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "up.leak", Arguments: map[string]any{}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32050 || strings.Contains(werr.Message, "up-secret") {
		t.Errorf("leak: %v", err)
	}
	if text, isErr := callTool(t, cs, "up.leak_result", map[string]any{}); !isErr || strings.Contains(text, "up-secret") || !strings.Contains(text, "refused") {
		t.Errorf("leak_result: %q", text)
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("the upstream refused %d requests: auth: or headers: were not sent", n)
	}
	// The manifest's server entry shows the gateway.
	for _, s := range a.Manifest().MCPServers {
		if s.ID != "gw" {
			continue
		}
		if s.Gateway == nil || len(s.Gateway.Upstreams) != 1 || !s.Gateway.Upstreams[0].Reached || s.Gateway.Upstreams[0].Tools != 3 ||
			!slices.Contains(s.Tools, "up.echo") || s.Gateway.Audiences[0] != "/mcp/support" {
			t.Errorf("manifest gateway = %+v (tools %v)", s.Gateway, s.Tools)
		}
		if strings.Contains(s.Gateway.Upstreams[0].Endpoint, "secret") {
			t.Errorf("manifest shows a secret: %s", s.Gateway.Upstreams[0].Endpoint)
		}
	}
}

func TestGatewayBadAuthIsAConfigError(t *testing.T) {
	t.Parallel()
	_, err := buildYAML(t, `
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    upstreams:
      - id: up
        url: http://127.0.0.1:1/mcp
        auth: { type: magic }
`)
	if err == nil || !strings.Contains(err.Error(), "helix.yaml:8:15: mcps[0].upstreams[0].auth:") {
		t.Fatalf("error = %v", err)
	}
}

// bearerSession connects to server id of a with an API key.
func bearerSession(t *testing.T, a *app.App, id, key string) *sdk.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: &bearer{key: key}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: serverURL(t, a, id) + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type bearer struct{ key string }

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// Two principals through one gateway: the policy lets alice (role support)
// call the upstream's tools and hides them from mallory; every call is audited
// with its principal and outcome, and the upstream's token never reaches a
// client or the audit.
func TestGatewayPoliciesAndAuditFromYAML(t *testing.T) {
	t.Parallel()
	url, _ := upstreamWithToken(t, "up-secret")
	logs := &syncBuffer{}
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: greet
    trigger: direct://greet
    steps: []
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    api_keys:
      - { key: alice-key-0123456789, name: alice, roles: [support] }
      - { key: mallory-key-0123456789, name: mallory }
    upstreams:
      - id: up
        url: `+url+`
        headers: { X-Team: support }
        auth: { type: bearer, token: up-secret }
    policies:
      - tools: ["up.*"]
        allow: { roles: [support] }
    audit: { sink: log, arguments: full }
`))
	if err != nil {
		t.Fatal(err)
	}
	opts := quiet
	opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	cfg.Helix.DataDir = t.TempDir() // the audit's spool
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	alice := bearerSession(t, a, "gw", "alice-key-0123456789")
	if text, isErr := callTool(t, alice, "up.echo", map[string]any{"text": "a"}); text != "up:a" || isErr {
		t.Fatalf("alice: %q %v", text, isErr)
	}
	mallory := bearerSession(t, a, "gw", "mallory-key-0123456789")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lt, err := mallory.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "greet" {
		t.Fatalf("mallory sees %+v (%v)", lt, err)
	}
	if _, isErr := callTool(t, mallory, "up.echo", map[string]any{"text": "m"}); !isErr {
		t.Fatal("mallory's call went through")
	}
	testtools.Eventually(t, "both calls audited", func() bool {
		s := logs.String()
		return strings.Contains(s, `"principal":"alice"`) && strings.Contains(s, `"principal":"mallory"`)
	})
	var outcomes []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"msg":"audit"`) {
			var rec struct{ Principal, Outcome, Name string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			outcomes = append(outcomes, rec.Principal+":"+rec.Name+":"+rec.Outcome)
		}
	}
	slices.Sort(outcomes)
	if !slices.Equal(outcomes, []string{"alice:up.echo:ok", "mallory:up.echo:denied"}) {
		t.Errorf("audit = %v", outcomes)
	}
	if strings.Contains(logs.String(), "up-secret") {
		t.Error("the upstream's token is in the log")
	}
}
