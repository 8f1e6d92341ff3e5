// Package browsertest drives Debian's chromium, headless, through chromedp for
// the console's tests: it loads pages, collects what the browser reports as an
// error (uncaught exceptions, console.error, failed loads), clicks and types,
// and takes screenshots for docs/console.md.
//
// Tests call New, which skips the test when no chromium is installed and
// HELIX_REQUIRE_BROWSER is not set; make test sets it, so there a missing
// browser fails instead of hiding every browser test.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser is one headless chromium with one tab.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu     sync.Mutex
	errors []string
}

// Path is the chromium binary: $HELIX_CHROMIUM, else chromium or
// chromium-browser on PATH; "" when there is none.
func Path() string {
	if p := os.Getenv("HELIX_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless browser for t, stopped at the test's end. width and
// height are the window's size in CSS pixels (1280×800 for a desktop, 390×844
// for a phone).
func New(t testing.TB, width, height int) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("HELIX_REQUIRE_BROWSER") != "" {
			t.Fatal("no chromium found (HELIX_REQUIRE_BROWSER is set): install Debian's chromium, or set HELIX_CHROMIUM")
		}
		t.Skip("no chromium installed (apt-get install chromium); make test installs it")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // tests run as root, where chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(width, height),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &Browser{t: t, ctx: ctx}
	// Start the browser now (so that its start-up is not counted in the first
	// page's time) and subscribe to what the page reports as an error.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting chromium (%s): %v", path, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				where := m.URL
				if where != "" {
					where = fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
				}
				b.addError(m.String() + where)
			}
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	return b
}

func (b *Browser) addError(s string) {
	b.mu.Lock()
	b.errors = append(b.errors, s)
	b.mu.Unlock()
}

// Errors returns and forgets the errors the browser reported so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.errors
	b.errors = nil
	return out
}

// Context is the tab's chromedp context, for actions this package has no
// helper for.
func (b *Browser) Context() context.Context { return b.ctx }

// Run runs chromedp actions in the tab with a timeout of d.
func (b *Browser) Run(d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// Get runs one action that returns a value, with a timeout of d.
func Get[T any](b *Browser, d time.Duration, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// Visit loads url and waits until its body is there; it fails the test when
// the page cannot be loaded.
func (b *Browser) Visit(url string) {
	b.t.Helper()
	if err := b.Run(20*time.Second, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		b.t.Fatalf("visit %s: %v", url, err)
	}
}

// Text returns the visible text of the first element matching the CSS
// selector sel.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	s, err := Get(b, 10*time.Second, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		b.t.Fatalf("text of %q: %v", sel, err)
	}
	return s
}

// HTML returns the document's outer HTML as the browser has it now.
func (b *Browser) HTML() string {
	b.t.Helper()
	s, err := Get(b, 10*time.Second, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		b.t.Fatalf("document HTML: %v", err)
	}
	return s
}

// Screenshot writes a PNG of the whole page to path (quality 100 is what
// makes chromedp take a PNG; anything less is a JPEG).
func (b *Browser) Screenshot(path string) {
	b.t.Helper()
	png, err := Get(b, 20*time.Second, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
}

// WaitErrors waits up to two seconds until at least n errors were reported,
// then returns and forgets them (the browser reports asynchronously).
func (b *Browser) WaitErrors(n int) []string {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		b.mu.Lock()
		have := len(b.errors)
		b.mu.Unlock()
		if have >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b.Errors()
}

// NoErrors fails the test when the browser reported errors since the last
// call, naming the page.
func (b *Browser) NoErrors(page string) {
	b.t.Helper()
	// Give the browser a moment to report what the page did last.
	time.Sleep(100 * time.Millisecond)
	if errs := b.Errors(); len(errs) > 0 {
		b.t.Errorf("%s: the browser reported %d error(s):\n  %s", page, len(errs), strings.Join(errs, "\n  "))
	}
}

// String names the browser for messages.
func (b *Browser) String() string { return fmt.Sprintf("chromium %s", Path()) }
