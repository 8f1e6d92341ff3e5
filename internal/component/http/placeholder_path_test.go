package http_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	helixhttp "github.com/arvenza/helix/internal/component/http"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// TestPlaceholderPathReachesOnlyItsPath: a path value resolved from a placeholder
// (encoded by uri.ExpandURI) reaches the server as one path segment, encoded once:
// "x?y=1" arrives as /users/x%3Fy=1 (not %253F), "../admin" as /users/..%2Fadmin, and
// no request reaches /admin.
func TestPlaceholderPathReachesOnlyItsPath(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
	}))
	defer hs.Close()
	comp := helixhttp.New(nil)
	for value, want := range map[string]string{
		"x?y=1":    "/users/x%3Fy=1",
		"../admin": "/users/..%2Fadmin",
		"a/b":      "/users/a%2Fb",
		"x#y":      "/users/x%23y",
		"%2e%2e":   "/users/%252e%252e",
	} {
		template := hs.URL + "/users/${body.x}"
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"x": value})
		raw, err := uri.ExpandURI(template, ex)
		if err != nil {
			t.Fatal(err)
		}
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		u.Template = template
		ep, err := comp.CreateEndpoint(u)
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		p, _ := ep.CreateProducer()
		if err := p.Process(context.Background(), ex); err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		mu.Lock()
		got := paths[len(paths)-1]
		mu.Unlock()
		if got != want {
			t.Errorf("%q reached %s, want %s", value, got, want)
		}
	}
	for _, p := range paths {
		if strings.HasPrefix(p, "/admin") {
			t.Errorf("a request reached %s", p)
		}
	}
}
