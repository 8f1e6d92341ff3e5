package app_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/console/browsertest"
	"github.com/arvenza/helix/pkg/app"
)

// The Exchanges page in a real browser, against the quickstart, signed in
// with the link Helix prints: a curl to the quickstart shows in the live feed
// within a second, its page shows the exchange before and after each step
// with the caller's secret header redacted, the operator replays it; a
// read-only key sees no replay button and gets 403 on POST. No page reports a
// console error. With
// HELIX_CONSOLE_SCREENSHOTS=1 it writes docs/console/exchanges.png.
func TestConsoleExchangesInBrowser(t *testing.T) {
	// Sequential: t.Setenv (the quickstart's port and the console's keys).
	const viewerKey, operatorKey = "viewer-key-4e1d7c", "operator-key-9b2a6f"
	t.Setenv("QUICKSTART_PORT", "0")
	t.Setenv("CONSOLE_TEST_VIEWER_KEY", viewerKey)
	t.Setenv("CONSOLE_TEST_OPERATOR_KEY", operatorKey)
	b := browsertest.New(t, 1280, 800)
	a, _, err := app.Load(quiet, "../../examples/quickstart.yaml", "testdata/console_exchanges.yaml")
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	greet := httpBase(t, a, "127.0.0.1:0") + "/greet"
	console := "http://" + a.ManagementAddr() + "/console"
	// get fetches a console page with key, as a script or curl would.
	get := func(u, key string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	curl := func(name, secret string) {
		t.Helper()
		req, _ := http.NewRequest("POST", greet, strings.NewReader(`{"name":"`+name+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("quickstart answered %d", resp.StatusCode)
		}
	}

	curl("Grace", "earlier-caller-secret")
	// A name that is not text fails the greet transform: a failed exchange.
	resp, err := http.Post(greet, "application/json", strings.NewReader(`{"name":5}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Fatal("the quickstart greeted a number")
	}
	// The browser signs in with the link Helix prints at start (the local
	// operator), as a new user would.
	b.Visit(a.ConsoleURL())
	b.Visit(console + "/exchanges")
	if err := b.Run(10*time.Second, chromedp.Poll[chromedp.Void](`document.getElementById("feed-state").textContent === "Live feed: on."`)); err != nil {
		t.Fatalf("the live feed did not start: %v (%s)", err, b.Text("#feed-state"))
	}
	b.NoErrors("/exchanges")
	curl("Ada", "curl-caller-secret")
	sent := time.Now()
	// The deadline is the promise; on a healthy machine the row
	// arrives in milliseconds.
	if err := b.Run(time.Second, chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#exchange-rows tr.new")].some(r => r.textContent.includes("greet-http"))`)); err != nil {
		t.Fatalf("the curl's exchange was not in the live feed within 1 s: %v", err)
	}
	t.Logf("the exchange appeared in the feed %v after the curl answered", time.Since(sent).Round(time.Millisecond))
	rows := b.Text("#exchange-rows")
	if !strings.Contains(rows, "greet-http") || !strings.Contains(rows, "ok") || !strings.Contains(rows, "failed") {
		t.Errorf("feed rows: %s", rows)
	}
	if os.Getenv("HELIX_CONSOLE_SCREENSHOTS") == "1" {
		// Quality 100 is what makes chromium encode a PNG (below it, a JPEG).
		png, err := browsertest.Get(b, 20*time.Second, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "console", "exchanges.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The new exchange's page, reached by its link.
	if err := b.Run(10*time.Second, chromedp.Click(chromedp.CSS("#exchange-rows tr.new a")), chromedp.WaitReady(chromedp.CSS("#steps"))); err != nil {
		t.Fatal(err)
	}
	b.NoErrors("exchange page")
	detailURL, err := browsertest.Get(b, 5*time.Second, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	page := b.HTML()
	for _, want := range []string{"Before", "After", "Hello, Ada!", `"name":"Ada"`, "<em>redacted</em>", "greet-http",
		"httpMethod=POST"} {
		if !strings.Contains(page, want) {
			t.Errorf("exchange page lacks %q", want)
		}
	}
	for _, secret := range []string{"curl-caller-secret", viewerKey, operatorKey} {
		if strings.Contains(page, secret) {
			t.Errorf("exchange page shows %q", secret)
		}
	}
	if !strings.Contains(page, `id="replay"`) {
		t.Error("the operator has no replay button")
	}
	// A read-only key gets the same page without the button, and 403 on the
	// replay itself; an operator key gets the button.
	code, viewed := get(detailURL, viewerKey)
	if code != 200 || !strings.Contains(viewed, "Hello, Ada!") || strings.Contains(viewed, `id="replay"`) || strings.Contains(viewed, "/replay\"") {
		t.Errorf("the viewer's page (%d) offers a replay or lacks the exchange:\n%s", code, viewed)
	}
	if _, opPage := get(detailURL, operatorKey); !strings.Contains(opPage, `id="replay"`) {
		t.Error("an operator key gets no replay button")
	}
	req, _ := http.NewRequest("POST", strings.TrimSuffix(detailURL, "/")+"/replay", nil)
	req.Header.Set("Authorization", "Bearer "+viewerKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's replay: %d, want 403", resp.StatusCode)
	}

	// The operator replays it and lands on the new exchange, marked a replay.
	if err := b.Run(20*time.Second, chromedp.Click(chromedp.CSS("#replay")), chromedp.WaitReady(chromedp.CSS("#replay-of"))); err != nil {
		t.Fatalf("replay: %v\n%s", err, b.HTML())
	}
	b.NoErrors("replayed exchange page")
	if got := b.Text("#replay-of"); !strings.HasPrefix(got, "replay of exchange #") {
		t.Errorf("replay page says %q", got)
	}
	if got := b.Text("#exchange-status"); got != "ok" {
		t.Errorf("replay status %q", got)
	}
	if page := b.HTML(); !strings.Contains(page, "Hello, Ada!") || !strings.Contains(page, "console: local") {
		t.Errorf("replayed exchange page:\n%s", page)
	}

	// On a phone the list fits the screen's width (wide tables scroll inside
	// their own box).
	if err := b.Run(10*time.Second, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	b.Visit(console + "/exchanges")
	width, err := browsertest.Get(b, 5*time.Second, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil || width > 390 {
		t.Errorf("phone: the page is %d px wide (%v)", width, err)
	}
	b.NoErrors("/exchanges on a phone")
}

// An MCP tool call made with an API key is captured with the key's name as
// its principal, and the principal filter finds it.
func TestConsoleCapturesMCPCallerAsPrincipal(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  console:
    auth:
      api_keys: [{ key: console-viewer-key-1, name: vera }]
tools:
  - id: echo
    description: "Returns its text"
    input:
      text: { type: string, required: true }
    output:
      text: { type: string }
    steps:
      - transform:
          starlang: |
            {"text": payload["text"]}
mcps:
  - id: tools
    addr: "127.0.0.1:0"
    expose: [echo]
    api_keys: [{ key: mcp-caller-key-1, name: alice }]
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	cs, err := sdkSession(t, serverURL(t, a, "tools")+"/mcp", http.Header{"Authorization": {"Bearer mcp-caller-key-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, cs, "echo", map[string]any{"text": "hi"}); isErr || !strings.Contains(text, "hi") {
		t.Fatalf("echo: %q %v", text, isErr)
	}
	req, _ := http.NewRequest("GET", "http://"+a.ManagementAddr()+"/console/exchanges?principal=alice", nil)
	req.Header.Set("Authorization", "Bearer console-viewer-key-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `<td>alice</td>`) || !strings.Contains(string(body), `<td>echo</td>`) {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), "mcp-caller-key-1") {
		t.Error("the page shows the caller's key")
	}
}
