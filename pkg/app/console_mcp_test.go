package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/console/browsertest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

// consoleMCPExtra is the second file of the console test: a server with
// api_keys and a gateway in front of an in-process upstream.
const consoleMCPExtra = `
mcps:
  - id: secure
    addr: "127.0.0.1:0"
    expose: [greet]
    api_keys: ["${env:CONSOLE_MCP_TEST_KEY}"]
  - id: gw
    addr: "127.0.0.1:0"
    expose: []
    upstreams:
      - id: up
        url: UPSTREAM_URL
    audiences:
      - { path: /mcp/support, tools: ["up.*"] }
    policies:
      - tools: ["up.echo"]
        deny: { principals: [mallory] }
        rate: 5/s
    audit:
      sink: log
`

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

// echoUpstream is a go-sdk MCP server over Streamable HTTP with one tool.
func echoUpstream(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo the text"}, func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "up:" + a.Text}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// A new user's path through the MCP page, in a real browser: the
// quickstart's server and greet with its schema, a try-it call answering
// "Hello, Ada!" with the raw JSON-RPC shown, a server with api_keys refusing
// a call without the key (401) and taking one with it, the key nowhere in
// the page; a gateway's upstream healthy with its tools and policies; no
// console errors at 1280 and 390 px.
func TestConsoleMCPPageInBrowser(t *testing.T) {
	const key = "console-mcp-test-key-7f3a9c"
	t.Setenv("CONSOLE_MCP_TEST_KEY", key)
	t.Setenv("QUICKSTART_PORT", "0")
	t.Setenv("QUICKSTART_MCP_PORT", "0")
	extra := filepath.Join(t.TempDir(), "extra.yaml")
	if err := os.WriteFile(extra, []byte(strings.Replace(consoleMCPExtra, "UPSTREAM_URL", echoUpstream(t), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A logger that takes info lines (into nothing), so that the audit log
	// sink writes its records.
	opts := quiet
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, _, err := app.Load(opts, "../../examples/quickstart.yaml", extra)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	link := a.ConsoleURL()
	if link == "" {
		t.Fatal("the quickstart serves no console")
	}
	base := link[:strings.Index(link, "/console/")] + "/console"
	b := browsertest.New(t, 1280, 800)
	b.Visit(link) // the one-time link signs the browser in (as the local operator)
	b.Visit(base + "/mcp")
	list := b.Text("main")
	for _, want := range []string{"quickstart", "secure", "gw", "API keys (1)", "1 upstream"} {
		if !strings.Contains(list, want) {
			t.Errorf("/mcp does not show %q:\n%s", want, list)
		}
	}
	b.NoErrors("/mcp")

	openLegacySession(t, serverURL(t, a, "quickstart")+"/mcp") // listed with its client
	b.Visit(base + "/mcp/quickstart")
	if s := b.Text("table.mcp-tools"); !strings.Contains(s, "greet") || !strings.Contains(s, "Greet a person by name") {
		t.Errorf("quickstart's tools: %s", s)
	}
	if s := b.Text("table.mcp-sessions"); !strings.Contains(s, "legacy-client 2") || !strings.Contains(s, "streamable") || !strings.Contains(s, "2025-11-25") {
		t.Errorf("quickstart's sessions: %s", s)
	}
	b.NoErrors("/mcp/quickstart")

	b.Visit(base + "/mcp/quickstart/tools/greet")
	if s := b.Text("table.schema"); !strings.Contains(s, "name") || !strings.Contains(s, "Who to greet") || !strings.Contains(s, "World") {
		t.Errorf("greet's schema: %s", s)
	}
	call := func(credential string) (outcome, wire string) {
		t.Helper()
		acts := []chromedp.Action[chromedp.Void]{chromedp.SetValue(chromedp.CSS("#f0"), "Ada")}
		if credential != "" {
			acts = append(acts, chromedp.SendKeys(chromedp.CSS("#credential"), credential))
		}
		acts = append(acts, chromedp.Click(chromedp.CSS("#tryit button[type=submit]")))
		if err := b.Run(20*time.Second, acts...); err != nil {
			t.Fatalf("submitting the try-it form: %v", err)
		}
		testtools.Eventually(t, "the call's outcome", func() bool {
			s, err := browsertest.Get(b, 5*time.Second, chromedp.TextContent(chromedp.CSS("#transcript p.outcome")))
			return err == nil && strings.HasPrefix(s, "Status:")
		})
		return b.Text("#transcript p.outcome"), b.Text("#transcript ol.wire")
	}
	outcome, wire := call("")
	if !strings.Contains(outcome, "Status: ok") {
		t.Errorf("greet: outcome %q", outcome)
	}
	for _, want := range []string{`"method": "initialize"`, `"method": "notifications/initialized"`, `"method": "tools/call"`, `"progressToken"`, "Hello, Ada!", "← response"} {
		if !strings.Contains(wire, want) {
			t.Errorf("the wire does not show %q:\n%s", want, wire)
		}
	}
	if s := b.Text("#transcript pre.result"); !strings.Contains(s, "Hello, Ada!") {
		t.Errorf("result %q", s)
	}
	b.NoErrors("/mcp/quickstart/tools/greet")
	shot(t, b, "mcp.png")

	// api_keys: refused without the key, the 401 shown; accepted with it.
	b.Visit(base + "/mcp/secure/tools/greet")
	outcome, wire = call("")
	if !strings.Contains(outcome, "HTTP 401") || !strings.Contains(wire, "401") {
		t.Errorf("without the key: outcome %q\n%s", outcome, wire)
	}
	b.Visit(base + "/mcp/secure/tools/greet")
	outcome, wire = call(key)
	if !strings.Contains(outcome, "Status: ok") || !strings.Contains(wire, "Hello, Ada!") ||
		!strings.Contains(wire, "Authorization: Bearer (the credential you entered, not shown)") {
		t.Errorf("with the key: outcome %q\n%s", outcome, wire)
	}
	if html := b.HTML(); strings.Contains(html, key) {
		t.Errorf("the page shows the API key")
	}
	b.NoErrors("/mcp/secure/tools/greet")

	// The gateway: its upstream healthy, the tools it contributes, the
	// audience, the policy as written with file:line, the audit sink.
	testtools.Eventually(t, "the upstream healthy on the page", func() bool {
		b.Visit(base + "/mcp/gw")
		s, err := browsertest.Get(b, 5*time.Second, chromedp.TextContent(chromedp.CSS("#upstream-up h4")))
		return err == nil && strings.Contains(s, "healthy") && !strings.Contains(s, "unhealthy")
	})
	gw := b.Text("main")
	for _, want := range []string{"up.echo", "/mcp/support", "principals mallory", "5/s per principal and tool",
		"extra.yaml:", "log, arguments: digest", "per-client", "Echo the text"} {
		if !strings.Contains(gw, want) {
			t.Errorf("the gateway page does not show %q:\n%s", want, gw)
		}
	}
	b.NoErrors("/mcp/gw")
	b.Visit(base + "/mcp/gw/tools/up.echo")
	if s := b.Text("table.schema"); !strings.Contains(s, "text") || !strings.Contains(s, "what to echo") {
		t.Errorf("up.echo's schema: %s", s)
	}
	// A try-it call through the gateway reaches the upstream, and the audit
	// sink's counter of written records moves on the page.
	if outcome, wire := call(""); !strings.Contains(outcome, "Status: ok") || !strings.Contains(wire, "up:Ada") {
		t.Errorf("up.echo through the gateway: outcome %q\n%s", outcome, wire)
	}
	b.NoErrors("/mcp/gw/tools/up.echo")
	testtools.Eventually(t, "the audit record counted on the page", func() bool {
		b.Visit(base + "/mcp/gw")
		s, err := browsertest.Get(b, 5*time.Second, chromedp.TextContent(chromedp.CSS("main")))
		return err == nil && strings.Contains(s, "1 written")
	})

	// A phone: every page loads without errors.
	if err := b.Run(10*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/mcp", "/mcp/quickstart", "/mcp/quickstart/tools/greet", "/mcp/gw"} {
		b.Visit(base + p)
		b.NoErrors(p + " at 390 px")
		w, err := browsertest.Get(b, 5*time.Second, chromedp.Evaluate[int]("document.documentElement.scrollWidth"))
		if err != nil || w > 390 {
			wide, _ := browsertest.Get(b, 5*time.Second, chromedp.Evaluate[string](`[...document.querySelectorAll("main *")].filter(e => e.getBoundingClientRect().right > 390).slice(0, 5).map(e => e.tagName + "." + e.className + ": " + e.textContent.slice(0, 60)).join("\n")`))
			t.Errorf("%s at 390 px is %d px wide (%v); wider than the screen:\n%s", p, w, err, wide)
		}
	}
}

// openLegacySession opens a session with a 2025-11-25 initialize (a
// 2026-07-28 client, as the go-sdk's, keeps none) and leaves it open.
func openLegacySession(t *testing.T, endpoint string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize",`+
		`"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy-client","version":"2"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, resp.Header.Get("Mcp-Session-Id"))
	}
}

// shot writes docs/console/<name> when HELIX_CONSOLE_SCREENSHOTS=1.
func shot(t *testing.T, b *browsertest.Browser, name string) {
	t.Helper()
	if os.Getenv("HELIX_CONSOLE_SCREENSHOTS") != "1" {
		return
	}
	dir := filepath.Join("..", "..", "docs", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b.Screenshot(filepath.Join(dir, name))
	fmt.Println("wrote", filepath.Join(dir, name))
}
