package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// lockedLog is a log sink for an app whose goroutines log concurrently.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedLog) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// spansText is every text of the exported spans: names, status messages,
// attributes and events.
func spansText(exp *tracetest.InMemoryExporter) string {
	var b strings.Builder
	for _, s := range exp.GetSpans() {
		fmt.Fprintf(&b, "%s | %s | %v\n", s.Name, s.Status.Description, s.Attributes)
		for _, e := range s.Events {
			fmt.Fprintf(&b, "  event %s %v\n", e.Name, e.Attributes)
		}
	}
	return b.String()
}

// TestSecretsStayOutOfErrors: an http:// step whose URL carries an API key from
// ${env:…} fails (closed port; a 500 upstream that echoes the key) — the MCP
// caller, the http-server:// caller, the log and the spans see appid=*** or
// [redacted], never the key.
func TestSecretsStayOutOfErrors(t *testing.T) {
	const key = "k3y-app-9d41c7e2"
	t.Setenv("HELIX_TEST_WEATHER_KEY", key)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"appid %s is not valid"}`, r.URL.Query().Get("appid"))
	}))
	defer echo.Close()

	var logs lockedLog
	exp := tracetest.NewInMemoryExporter()
	cfg, err := config.LoadBytes("helix.yaml", []byte(fmt.Sprintf(`
helix:
  tracing:
    exporter: otlp
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: sec
workflows:
  - id: refused
    description: "calls a closed port"
    trigger: direct://refused
    steps:
      - target: http://%[1]s/w?appid=${env:HELIX_TEST_WEATHER_KEY}&timeout=5s
  - id: echoed
    description: "calls an upstream that echoes the key"
    trigger: direct://echoed
    steps:
      - target: %[2]s/w?appid=${env:HELIX_TEST_WEATHER_KEY}
  - id: web
    trigger: http-server://127.0.0.1:0/w
    steps:
      - target: http://%[1]s/w?appid=${env:HELIX_TEST_WEATHER_KEY}&timeout=5s
  - id: web-echoed
    trigger: http-server://127.0.0.1:0/e
    steps:
      - target: %[2]s/w?appid=${env:HELIX_TEST_WEATHER_KEY}
`, closed, echo.URL)))
	if err != nil {
		t.Fatal(err)
	}
	opts := quiet
	opts.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.SpanExporter = exp
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := mcpSession(t, a, "sec")
	for _, tool := range []string{"refused", "echoed"} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if !res.IsError || len(res.Content) == 0 {
			t.Fatalf("%s: want an error result, got %+v", tool, res)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if strings.Contains(text, key) || !strings.Contains(text, "appid=***") {
			t.Errorf("MCP caller of %s sees: %s", tool, text)
		}
		if tool == "echoed" && !strings.Contains(text, "[redacted]") {
			t.Errorf("the echoed key is not replaced by [redacted]: %s", text)
		}
	}
	for _, path := range []string{"/w", "/e"} {
		resp, err := http.Post(httpBase(t, a, "127.0.0.1:0")+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || strings.Contains(string(body), key) || !strings.Contains(string(body), "appid=***") {
			t.Errorf("http-server:// caller of %s sees %d: %s", path, resp.StatusCode, body)
		}
	}
	spanNamed(t, exp, "workflow web-echoed")
	if text := spansText(exp); strings.Contains(text, key) {
		t.Errorf("a span holds the key:\n%s", text)
	} else if !strings.Contains(text, "appid=***") {
		t.Errorf("no span tells of the failure:\n%s", text)
	}
	if out := logs.String(); strings.Contains(out, key) {
		t.Errorf("the log holds the key:\n%s", out)
	}
}

// A credential written literally in the YAML (not through ${env:…}) is a secret
// too: an mcp:// server that echoes the bearer token in its error must not show it
// to Helix's caller or its log.
func TestLiteralCredentialsStayOutOfErrors(t *testing.T) {
	t.Parallel()
	const token = "literal-b3arer-7c51e0aa"
	up := sdk.NewServer(&sdk.Implementation{Name: "echoing", Version: "1"}, nil)
	up.AddTool(&sdk.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{
				Text: "refused: " + req.Extra.Header.Get("Authorization") + " is not known here"}}}, nil
		})
	upstream := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, nil))
	defer upstream.Close()

	var logs lockedLog
	cfg, err := config.LoadBytes("helix.yaml", []byte(fmt.Sprintf(`
helix:
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: sec
workflows:
  - id: relay
    description: "calls a server that echoes the token"
    trigger: direct://relay
    steps:
      - target:
          uri: mcp://%s/mcp/whoami
          auth:
            type: bearer
            token: "%s"
`, strings.TrimPrefix(upstream.URL, "http://"), token)))
	if err != nil {
		t.Fatal(err)
	}
	opts := quiet
	opts.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := mcpSession(t, a, "sec").CallTool(ctx, &sdk.CallToolParams{Name: "relay", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) == 0 {
		t.Fatalf("want the upstream's refusal as an error result, got %+v", res)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if strings.Contains(text, token) || !strings.Contains(text, "[redacted]") {
		t.Errorf("the MCP caller sees: %s", text)
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the log shows the token:\n%s", logs.String())
	}
}
