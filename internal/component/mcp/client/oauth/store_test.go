package oauth

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

func TestCanonicalResource(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"HTTPS://MCP.Example.com:443/mcp/": "https://mcp.example.com/mcp",
		"http://127.0.0.1:8080/mcp?x=1#f":  "http://127.0.0.1:8080/mcp",
		"http://example.com:80":            "http://example.com",
		"https://[::1]:9000/":              "https://[::1]:9000",
	} {
		if got, err := CanonicalResource(in); err != nil || got != want {
			t.Errorf("CanonicalResource(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ftp://x/y", "localhost:3000", "://"} {
		if _, err := CanonicalResource(bad); err == nil {
			t.Errorf("CanonicalResource(%q): want an error", bad)
		}
	}
}

func TestStoreRoundTripAndRefusesFilesOthersCanRead(t *testing.T) {
	t.Parallel()
	s := Store{Dir: filepath.Join(t.TempDir(), "tokens")}
	l := &Login{Resource: "https://MCP.example.com/mcp/", ClientID: "c", TokenURL: "https://as.example.com/token",
		Token: &oauth2.Token{AccessToken: "access-secret-1234", RefreshToken: "refresh-secret-1234", Expiry: time.Now().Add(time.Hour)}}
	if err := s.Save(l); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("https://mcp.example.com/mcp")
	if err != nil || got == nil || got.Token.RefreshToken != "refresh-secret-1234" {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	if missing, err := s.Load("https://other.example.com/mcp"); missing != nil || err != nil {
		t.Errorf("Load of another server = %v, %v; want nothing", missing, err)
	}
	files, _ := filepath.Glob(filepath.Join(s.Dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	if strings.Contains(files[0], "example") {
		t.Errorf("file name %s carries the URL", files[0])
	}
	if err := os.Chmod(files[0], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("https://mcp.example.com/mcp"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Load of a 0644 file: err = %v, want a refusal that says what to do", err)
	}
	if err := s.Delete("https://mcp.example.com/mcp/"); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(); len(list) != 0 || err != nil {
		t.Errorf("List after Delete = %v, %v", list, err)
	}
}

func TestCallbackTakesOnlyLoopbackRedirects(t *testing.T) {
	t.Parallel()
	cb, err := listenCallback()
	if err != nil {
		t.Fatal(err)
	}
	defer cb.close()
	if !strings.HasPrefix(cb.redirectURL, "http://127.0.0.1:") || !strings.HasSuffix(cb.redirectURL, CallbackPath) {
		t.Fatalf("redirect URL %s", cb.redirectURL)
	}
	// A page that points a name of its own at 127.0.0.1 (DNS rebinding).
	req := httptest.NewRequest(http.MethodGet, cb.redirectURL+"?code=evil&state=s", nil)
	req.Host = "evil.example.com:" + strings.Split(strings.TrimPrefix(cb.redirectURL, "http://127.0.0.1:"), "/")[0]
	w := httptest.NewRecorder()
	cb.serve(w, req)
	if w.Code != http.StatusBadRequest {
		t.Errorf("redirect for another host: status %d, want 400", w.Code)
	}
	select {
	case r := <-cb.results:
		t.Fatalf("took %+v from another host", r)
	default:
	}

	resp, err := http.Get(cb.redirectURL + "?error=access_denied&error_description=the+user+said+no")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := <-cb.results
	if r.err == nil || !strings.Contains(r.err.Error(), "access_denied: the user said no") {
		t.Errorf("refusal = %+v", r)
	}
}
