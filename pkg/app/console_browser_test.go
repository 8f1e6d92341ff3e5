package app_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/console/browsertest"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// consoleSecret is the value of ${env:CONSOLE_TEST_SECRET}: it must appear in
// no page, JSON document or event stream of the console.
const consoleSecret = "s3cret-console-value-7f3a9c"

// A quickstart-like application, with the secret in a URL's query (a secret
// position: the scrub knows it) and in a header the workflow sets.
const browserYAML = `
helix:
  name: quickstart
  console:
    auth:
      api_keys:
        - {key: viewer-key-123, name: vera}
        - {key: operator-key-456, name: otto, roles: [operator]}
workflows:
  - id: greet-http
    description: "HTTP front door for greet"
    trigger: http-server://127.0.0.1:0/greet?httpMethod=POST&consumes=application/json
    steps:
      - target: direct://greet
  - id: greet
    description: "Greet a person by name"
    trigger: direct://greet
    steps:
      - transform:
          starlang: |
            name = payload.get("name", "World")
            {"greeting": "Hello, " ++ name ++ "!", "length": len(name)}
  - id: billing
    trigger: direct://billing
    steps:
      - set-header: {name: Authorization, constant: "Bearer ${env:CONSOLE_TEST_SECRET}"}
      - target: http://127.0.0.1:1/invoices?apikey=${env:CONSOLE_TEST_SECRET}
`

// Every page of the console (the pages registered by every part, so the
// sibling pages are covered once merged) in a real browser at 1280×800 and
// 390×844: no console errors, the secret nowhere, no sideways scrolling on a
// phone, the nav reachable by Tab; every route refuses a request without
// credentials (401) and every action a viewer (403).
func TestConsoleInABrowser(t *testing.T) {
	t.Setenv("CONSOLE_TEST_SECRET", consoleSecret)
	cfg, err := config.LoadBytes("helix.yaml", []byte(browserYAML))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	for i := 0; i < 5; i++ {
		_ = a.Context().Run(t.Context(), "greet", exchange.NewWithBody(exchange.InOut, map[string]any{"name": "Ada"}))
		_ = a.Context().Run(t.Context(), "billing", exchange.NewWithBody(exchange.InOut, "invoice"))
	}
	link := a.ConsoleURL()
	lu, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + lu.Host
	base := origin + "/console"
	pages := app.ConsolePages(a)
	routes := app.ConsoleRoutes(a)
	if len(pages) == 0 || len(routes) == 0 {
		t.Fatal("the console has no pages")
	}

	t.Run("401 and 403", func(t *testing.T) {
		for _, r := range routes {
			u := origin + fillPattern(r.Pattern)
			if code := status(t, r.Method, u, nil); code != http.StatusUnauthorized {
				t.Errorf("%s %s without credentials: %d, want 401", r.Method, u, code)
			}
			if r.Method == http.MethodPost {
				code := status(t, r.Method, u, map[string]string{"X-API-Key": "viewer-key-123", "Origin": origin})
				if code != http.StatusForbidden {
					t.Errorf("%s %s as a viewer: %d, want 403", r.Method, u, code)
				}
			}
		}
	})

	t.Run("secret in no response", func(t *testing.T) {
		for _, r := range routes {
			if r.Method != http.MethodGet || strings.Contains(r.Pattern, "{") {
				continue
			}
			body := read(t, origin+r.Pattern, "operator-key-456")
			if strings.Contains(body, consoleSecret) {
				t.Errorf("GET %s shows the secret", r.Pattern)
			}
		}
	})

	b := browsertest.New(t, 1280, 800)
	b.Visit(link)
	if href, err := browsertest.Get(b, 5*time.Second, chromedp.Evaluate[string](`location.href`)); err != nil || href != base+"/" {
		t.Fatalf("after the link the browser is at %q (%v), want %s/ without the token", href, err, base)
	}
	b.NoErrors("the sign-in link")

	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		if err := b.Run(10*time.Second, chromedp.EmulateViewport(size.w, size.h)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			u := base + p.Path
			if p.Path == "/" {
				u = base + "/"
			}
			b.Visit(u)
			b.NoErrors(size.name + " " + u)
			if html := b.HTML(); strings.Contains(html, consoleSecret) {
				t.Errorf("%s shows the secret", u)
			}
			wide, err := browsertest.Get(b, 5*time.Second, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
			if err != nil || wide {
				t.Errorf("%s at %d px: the page scrolls sideways (%v)", u, size.w, err)
			}
		}
	}
	if err := b.Run(10*time.Second, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}

	// Keyboard: Tab from the top reaches every navigation link.
	b.Visit(base + "/")
	want := map[string]bool{}
	for _, p := range pages {
		if p.Nav {
			want[strings.TrimSuffix(base+p.Path, "/")] = true
		}
	}
	for i := 0; i < 40 && len(want) > 0; i++ {
		if err := b.Run(5*time.Second, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		href, err := browsertest.Get(b, 5*time.Second, chromedp.Evaluate[string](`document.activeElement && document.activeElement.href || ""`))
		if err != nil {
			t.Fatal(err)
		}
		delete(want, strings.TrimSuffix(href, "/"))
	}
	if len(want) > 0 {
		t.Errorf("not reachable by Tab: %v", want)
	}

	// The overview refreshes itself: the live indicator says so in a word.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		state, _ := browsertest.Get(b, 5*time.Second, chromedp.Evaluate[string](`document.getElementById("live").textContent`))
		if state == "live" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the live indicator says %q, want live", state)
		case <-time.After(50 * time.Millisecond): // polling the page's state, not waiting for it to happen
		}
	}
	b.NoErrors("the overview after a refresh")
	if os.Getenv("HELIX_CONSOLE_SCREENSHOTS") == "1" {
		b.Visit(base + "/")
		b.Screenshot(filepath.Join("..", "..", "docs", "console", "overview.png"))
	}
}

// fillPattern turns a route pattern into a path: each {name} becomes "x".
func fillPattern(p string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			b.WriteString(p)
			return b.String()
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			b.WriteString(p)
			return b.String()
		}
		b.WriteString(p[:i] + "x")
		p = p[i+j+1:]
	}
}

func status(t *testing.T, method, u string, hdr map[string]string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, u, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// read returns what GET u answers within a second (an event stream does not
// end: its first second is what is read), at most 1 MiB.
func read(t *testing.T, u, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b)
}
