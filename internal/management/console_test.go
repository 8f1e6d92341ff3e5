package management

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The console is served under /console behind the loopback host check, like
// the manifest: a page whose domain was rebound to 127.0.0.1 cannot read it.
func TestConsoleBehindHostCheck(t *testing.T) {
	t.Parallel()
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("console " + r.URL.Path)) })
	s := New(Options{Logger: quiet(), Console: console})
	for _, tc := range []struct {
		host, path string
		code       int
		body       string
	}{
		{"127.0.0.1:9999", "/console/", 200, "console /console/"},
		{"localhost:9999", "/console/workflows/x", 200, "console /console/workflows/x"},
		{"127.0.0.1:9999", "/console", 301, ""},
		{"attacker.example:9999", "/console/", 403, ""},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.Host = tc.host
		rec := httptest.NewRecorder()
		s.handler(true).ServeHTTP(rec, req)
		if rec.Code != tc.code || (tc.body != "" && rec.Body.String() != tc.body) {
			t.Errorf("%s%s: %d %q, want %d %q", tc.host, tc.path, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
	// Without a console nothing is served there.
	rec := httptest.NewRecorder()
	New(Options{Logger: quiet()}).handler(true).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/console/", nil))
	if rec.Code != 404 {
		t.Errorf("no console: %d", rec.Code)
	}
}
