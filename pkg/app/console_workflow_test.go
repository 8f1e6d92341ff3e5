package app_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/console/browsertest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/chromedp/chromedp"
)

// The quickstart as a new user sees it in the console: the workflows listed,
// greet-http drawn with its log and target steps, counts rising as requests
// arrive, a node opened with the keyboard showing its YAML and file:line,
// greet's transform; with no browser error, at 1280 px and 390 px.
// Not parallel: t.Setenv.
func TestConsoleWorkflowPagesInABrowser(t *testing.T) {
	port := freeAddr(t)
	_, p, _ := strings.Cut(port, ":")
	t.Setenv("QUICKSTART_PORT", p)
	a := startApp(t, "../../examples/quickstart.yaml")
	link, err := url.Parse(a.ConsoleURL())
	if err != nil || link.Query().Get("token") == "" {
		t.Fatalf("console URL %q: %v", a.ConsoleURL(), err)
	}
	base := link.Scheme + "://" + link.Host + "/console"
	b := browsertest.New(t, 1280, 800)

	b.Visit(a.ConsoleURL()) // the printed link signs the browser in (a cookie)
	b.Visit(base + "/workflows")
	if got := b.Text("#workflows"); !strings.Contains(got, "greet-http") || !strings.Contains(got, "greet") {
		t.Fatalf("the list does not show the quickstart's workflows:\n%s", got)
	}
	noPageErrors(t, b, "/workflows")

	b.Visit(base + "/workflows/greet-http")
	label := func(sel string) string {
		t.Helper()
		r, err := browsertest.Get(b, 10*time.Second, chromedp.AttributeValue(chromedp.CSS(sel), "aria-label"))
		if err != nil {
			t.Fatalf("aria-label of %s: %v", sel, err)
		}
		return r.Value
	}
	if l := label(`a[data-top="0"]`); !strings.HasPrefix(l, "step 1: log greeting ${body.name}, at ") || !strings.HasSuffix(l, "no runs yet") {
		t.Errorf("log node: %q", l)
	}
	if l := label(`a[data-top="1"]`); !strings.HasPrefix(l, "step 2: target direct://greet, at ") {
		t.Errorf("target node: %q", l)
	}
	noPageErrors(t, b, "/workflows/greet-http")

	for i := 0; i < 3; i++ {
		resp, err := http.Post("http://"+port+"/greet", "application/json", strings.NewReader(`{"name":"Ada"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("greet: %d", resp.StatusCode)
		}
	}
	// workflow.js polls the counts: the open page shows them without a reload.
	testtools.Eventually(t, "the target node's count to reach 3 runs", func() bool {
		return strings.Contains(label(`a[data-top="1"]`), "3 runs · 0 errors · p99 ")
	})
	if got := b.Text("#wf-counts"); !strings.HasPrefix(got, "3 runs · 0 errors") {
		t.Errorf("workflow counts: %q", got)
	}

	// Open the target node with the keyboard.
	if err := b.Run(10*time.Second, chromedp.Focus(chromedp.CSS(`a[data-top="1"]`)), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("#node-yaml"))); err != nil {
		t.Fatalf("opening the target node: %v", err)
	}
	if where := b.Text("#node-where"); !regexp.MustCompile(`quickstart\.yaml:\d+:\d+$`).MatchString(where) {
		t.Errorf("node position %q, want quickstart.yaml:line:col", where)
	}
	if y := b.Text("#node-yaml"); y != "- target: direct://greet" {
		t.Errorf("node YAML %q", y)
	}
	noPageErrors(t, b, "/workflows/greet-http?node=2")
	if os.Getenv("HELIX_CONSOLE_SCREENSHOTS") == "1" {
		// Quality 100: chromium writes a PNG (below 100 it writes a JPEG).
		png, err := browsertest.Get(b, 20*time.Second, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "console", "workflow.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The link to greet, then greet's transform.
	if err := b.Run(10*time.Second, chromedp.Click(chromedp.CSS(`#detail a[href$="/workflows/greet"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[data-top="0"]`))); err != nil {
		t.Fatalf("following the target's link: %v", err)
	}
	if l := label(`a[data-top="0"]`); !strings.HasPrefix(l, `step 1: transform name = payload.get("name", "World") …, at `) || !strings.Contains(l, "3 runs") {
		t.Errorf("greet's transform: %q", l)
	}
	noPageErrors(t, b, "/workflows/greet")

	// A phone: the page is no wider than the screen; the graph scrolls in its box.
	if err := b.Run(10*time.Second, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	b.Visit(base + "/workflows/greet-http")
	width, err := browsertest.Get(b, 10*time.Second, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil || width > 390 {
		wide, _ := browsertest.Get(b, 10*time.Second, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("body *")).filter(e => e.getBoundingClientRect().right > 390 && !e.closest(".table-wrap")).map(e => e.tagName + "." + e.className + " " + e.textContent.slice(0, 40)).join("\n")`))
		t.Errorf("at 390 px the page is %d px wide (%v); too wide:\n%s", width, err, wide)
	}
	if l := label(`a[data-top="1"]`); !strings.Contains(l, "3 runs") {
		t.Errorf("phone: %q", l)
	}
	noPageErrors(t, b, "/workflows/greet-http at 390 px")
	b.Visit(base + "/workflows")
	if width, err := browsertest.Get(b, 10*time.Second, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || width > 390 {
		t.Errorf("at 390 px the list is %d px wide (%v)", width, err)
	}
	noPageErrors(t, b, "/workflows at 390 px")
}

// noPageErrors fails when the browser reported errors, but for the missing
// favicon.ico: a browser asks for one on the first page of an origin, and the
// console's frame (not this page's) decides whether to declare one.
func noPageErrors(t *testing.T, b *browsertest.Browser, page string) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // as browsertest.NoErrors: let the browser report the page's last errors
	for _, e := range b.Errors() {
		if !strings.Contains(e, "/favicon.ico") {
			t.Errorf("%s: the browser reported: %s", page, e)
		}
	}
}
