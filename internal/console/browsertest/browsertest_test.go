package browsertest_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/console/browsertest"
)

// The harness must see what a page reports as an error, or every "no console
// errors" check of the console's tests would pass for nothing.
func TestBrowserReportsPageErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/bad":
			_, _ = w.Write([]byte(`<!doctype html><title>bad</title><p id="x">hello</p><script>console.error("boom"); undefinedFunction();</script>`))
		default:
			_, _ = w.Write([]byte(`<!doctype html><title>good</title><p id="x">fine</p>`))
		}
	}))
	defer srv.Close()
	b := browsertest.New(t, 1280, 800)

	b.Visit(srv.URL + "/good")
	if got := b.Text("#x"); got != "fine" {
		t.Fatalf("text = %q", got)
	}
	b.NoErrors("good")

	b.Visit(srv.URL + "/bad")
	if got := b.Text("#x"); got != "hello" {
		t.Fatalf("text = %q", got)
	}
	errs := strings.Join(b.WaitErrors(2), "\n")
	if !strings.Contains(errs, "boom") || !strings.Contains(errs, "undefinedFunction") {
		t.Fatalf("errors = %q, want the console.error and the exception", errs)
	}

	png := filepath.Join(t.TempDir(), "shot.png")
	b.Screenshot(png)
	if fi, err := os.Stat(png); err != nil || fi.Size() < 100 {
		t.Fatalf("screenshot: %v %v", fi, err)
	}
}
