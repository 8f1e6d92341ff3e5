package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/browsertest"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/pipeline/pipelinetest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// consoleServer serves the console pages of the parts named, for one
// principal (the console's own sign-in is core's; here each role gets its own
// server).
func consoleServer(t *testing.T, a *app.App, p console.Principal, parts ...string) *httptest.Server {
	t.Helper()
	var pages []console.Page
	for _, name := range parts {
		pg, err := app.ConsolePage(a, name)
		if err != nil || pg == nil {
			t.Fatalf("console part %s: %v %v", name, pg, err)
		}
		pages = append(pages, *pg)
	}
	m := console.NewMux(console.Options{Pages: pages, AppName: "shop",
		Auth: console.AuthenticatorFunc(func(*http.Request) (console.Principal, error) { return p, nil })})
	mux := http.NewServeMux()
	mux.Handle("/", m.Handler())
	// The browser asks for /favicon.ico, outside the console.
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// The RAG and Runs pages on a real application, in a real browser: a
// pipeline that ingested a few documents (the embedded store, the test
// embedder) shows three rankings for a query, a keyword-only pipeline one; a
// durable workflow's run waits for an approval, a viewer gets no button and a
// 403, an operator approves it from the page and the run completes; no page
// reports an error, at 1280 and at 390 pixels.
func TestConsoleRAGAndRunsInABrowser(t *testing.T) {
	t.Parallel()
	docs, data := docsDir(t), t.TempDir()
	parts := pipelinetest.New().Parts()
	parts.Store = pipeline.DefaultParts().Store // the real embedded store
	opts := quiet
	opts.RAGParts = parts
	a := buildStart(t, `
helix: {data_dir: "`+data+`"}
pipelines:
  - id: docs
    description: "The product documentation"
    source: file://`+docs+`
    steps:
      - rag-embed: {provider: openai, model: test-words}
      - rag-store: {store: embedded}
      - rag-retrieve: {strategy: hybrid, top_k: 3}
  - id: plain
    source: file://`+docs+`
    steps:
      - rag-store: {store: embedded}
workflows:
  - id: ship
    durable: true
    trigger: direct://ship
    steps:
      - set-body: "order ${body}"
      - approve:
          message: "Ship ${body}?"
      - set-body: "${body} shipped"
`, opts)
	waitIngest(t, a, "docs")
	waitIngest(t, a, "plain")

	runs := durable.For(a.Context())
	ctx, cancel := context.WithTimeout(context.Background(), testtools.StartupBound)
	defer cancel()
	run, err := runs.Start(ctx, "ship", exchange.NewWithBody(exchange.InOut, "7"), durable.StartOptions{Principal: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the run waits for its approval", func() bool {
		r, err := runs.Get(ctx, run.ID)
		return err == nil && r.State == durable.StateInputRequired
	})

	viewer := consoleServer(t, a, console.Principal{Name: "vic", Role: console.RoleViewer}, "rag", "runs")
	operator := consoleServer(t, a, console.Principal{Name: "olga", Role: console.RoleOperator}, "rag", "runs")
	shots := os.Getenv("HELIX_CONSOLE_SCREENSHOTS") == "1"
	b := browsertest.New(t, 1280, 800)
	runURL := "/console/runs/" + url.PathEscape(run.ID)

	// RAG: the list, then a query showing three rankings side by side.
	b.Visit(viewer.URL + "/console/rag")
	if got := b.Text("#rag-pipelines"); !strings.Contains(got, "docs") || !strings.Contains(got, "openai test-words") || !strings.Contains(got, "plain") {
		t.Errorf("pipelines table: %q", got)
	}
	b.NoErrors("/rag")
	b.Visit(viewer.URL + "/console/rag/docs?q=" + url.QueryEscape("reboot the server after install") + "&k=3")
	for _, arm := range []string{"#arm-keyword", "#arm-vector", "#arm-fused"} {
		if got := b.Text(arm); !strings.Contains(got, "#1") || !strings.Contains(got, "install.md") {
			t.Errorf("%s: %q", arm, got)
		}
	}
	if got := b.Text("#arm-fused"); !strings.Contains(got, "keyword #") || !strings.Contains(got, "vector #") {
		t.Errorf("the fused ranking does not show the arms' ranks: %q", got)
	}
	b.NoErrors("/rag/docs")
	if shots {
		b.Screenshot(filepath.Join("..", "..", "docs", "console", "rag.png"))
	}
	b.Visit(viewer.URL + "/console/rag/plain?q=invoices")
	if html := b.HTML(); !strings.Contains(html, `id="arm-keyword"`) || strings.Contains(html, `id="arm-vector"`) || !strings.Contains(html, "billing.md") {
		t.Errorf("keyword-only pipeline: %s", html)
	}
	b.NoErrors("/rag/plain")

	// Runs: a viewer sees the waiting run and no action, and cannot act.
	b.Visit(viewer.URL + "/console/runs?state=input_required")
	if got := b.Text("#runs-table"); !strings.Contains(got, run.ID) || !strings.Contains(got, "an approval: Ship order 7?") {
		t.Errorf("runs table: %q", got)
	}
	b.NoErrors("/runs")
	b.Visit(viewer.URL + runURL)
	if html := b.HTML(); strings.Contains(html, runURL+"/") || strings.Contains(html, `id="run-approve"`) || !strings.Contains(html, "signed in as a viewer") {
		t.Errorf("a viewer's run page offers an action")
	}
	b.NoErrors("/runs/{id} as a viewer")
	req, _ := http.NewRequest(http.MethodPost, viewer.URL+runURL+"/approve", nil)
	req.Header.Set("Origin", viewer.URL)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's approve: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// An operator approves from the page; the run goes on and completes.
	b.Visit(operator.URL + runURL)
	if got := b.Text("#run-state"); got != "input_required" {
		t.Errorf("state %q", got)
	}
	if shots {
		b.Screenshot(filepath.Join("..", "..", "docs", "console", "runs.png"))
	}
	if err := b.Run(20*time.Second, chromedp.Click(chromedp.CSS("#run-approve")), chromedp.WaitVisible(chromedp.CSS("#run-done"))); err != nil {
		t.Fatalf("approve from the page: %v\n%s", err, b.HTML())
	}
	testtools.Eventually(t, "the approved run completes", func() bool {
		r, err := runs.Get(ctx, run.ID)
		return err == nil && r.State == durable.StateCompleted
	})
	r, _ := runs.Get(ctx, run.ID)
	if snap, err := exchange.DecodeSnapshot(r.Result); err != nil || snap.Body != "order 7 shipped" {
		t.Errorf("result %s: %v", r.Result, err)
	}
	b.Visit(operator.URL + runURL)
	if got := b.Text("#run-state"); got != "completed" {
		t.Errorf("state after approval %q", got)
	}
	if got := b.Text("#run-steps"); !strings.Contains(got, "approve") || !strings.Contains(got, "set-body") {
		t.Errorf("history: %q", got)
	}
	if html := b.HTML(); !strings.Contains(html, `class="run-checkpoint">{
  "body": "order 7"`) || !strings.Contains(html, `"body": "order 7 shipped"`) {
		t.Errorf("the steps' checkpoints are not shown: %s", html)
	}
	b.NoErrors("/runs/{id} as an operator")

	// The same through the console the app serves (its sign-in link makes
	// this browser the local operator): a second run is approved there.
	second, err := runs.Start(ctx, "ship", exchange.NewWithBody(exchange.InOut, "8"), durable.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the second run waits for its approval", func() bool {
		r, err := runs.Get(ctx, second.ID)
		return err == nil && r.State == durable.StateInputRequired
	})
	link := a.ConsoleURL()
	if link == "" {
		t.Fatal("the app serves no console")
	}
	b.Visit(link)
	served, _, _ := strings.Cut(link, "/console")
	b.Visit(served + "/console/rag/docs?q=kafka")
	if got := b.Text("#arm-fused"); !strings.Contains(got, "kafka.md") {
		t.Errorf("the served playground: %q", got)
	}
	b.NoErrors("the served /rag/docs")
	b.Visit(served + "/console/runs/" + url.PathEscape(second.ID))
	if err := b.Run(20*time.Second, chromedp.Click(chromedp.CSS("#run-approve")), chromedp.WaitVisible(chromedp.CSS("#run-done"))); err != nil {
		t.Fatalf("approve in the served console: %v\n%s", err, b.HTML())
	}
	testtools.Eventually(t, "the run approved in the served console completes", func() bool {
		r, err := runs.Get(ctx, second.ID)
		return err == nil && r.State == durable.StateCompleted
	})
	b.NoErrors("the served /runs/{id}")

	// On a phone: no page is wider than the screen.
	if err := b.Run(10*time.Second, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/console/rag", "/console/rag/docs?q=kafka", "/console/runs", runURL} {
		b.Visit(operator.URL + page)
		fits, err := browsertest.Get(b, 10*time.Second, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
		if err != nil || !fits {
			t.Errorf("%s at 390 px: wider than the screen (%v)", page, err)
		}
		b.NoErrors(page + " at 390 px")
	}
}
