package oauth

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkloadIdentityFederation: the workload's token, read from its file for
// every token request (platforms rotate it in place), is the JWT bearer grant's
// assertion; a client without a secret sends no Authorization header.
func TestWorkloadIdentityFederation(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("eyJ.workload-1.sig\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gs := newGrantServer(t)
	gs.Meta = func(m map[string]any) {
		m["grant_types_supported"] = []string{grantJWTBearer}
		m["token_endpoint_auth_methods_supported"] = []string{"none"}
	}
	gs.Token = func(r *http.Request, f url.Values) (int, map[string]any) {
		if r.Header.Get("Authorization") != "" || f.Has("client_secret") {
			t.Error("a public client authenticated")
		}
		if f.Get("grant_type") != grantJWTBearer || f.Get("client_id") != "wl" || f.Get("resource") != gs.URL+"/mcp" {
			t.Errorf("token request %v", f)
		}
		return http.StatusOK, map[string]any{"access_token": "at-for-" + f.Get("assertion"), "token_type": "Bearer"}
	}
	cc := &ClientCredentials{ClientID: "wl", Workload: &WorkloadToken{File: file}, HTTPClient: gs.Client()}
	tok, err := authorize(t, cc, gs.URL)
	if err != nil || tok != "at-for-eyJ.workload-1.sig" {
		t.Fatalf("token %q, err %v", tok, err)
	}
	if err := os.WriteFile(file, []byte("eyJ.workload-2.sig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err = authorize(t, cc, gs.URL); err != nil || tok != "at-for-eyJ.workload-2.sig" {
		t.Fatalf("after rotation: token %q, err %v", tok, err)
	}
}

func TestWorkloadTokenRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", maxWorkloadToken+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		w    WorkloadToken
		want string
	}{
		{"missing file", WorkloadToken{File: filepath.Join(dir, "gone")}, "no such file"},
		{"huge file", WorkloadToken{File: big}, "not a token"},
		{"empty file", WorkloadToken{File: empty}, "is empty"},
		{"empty token", WorkloadToken{}, "is empty"},
	} {
		if _, err := tc.w.read(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}

	// The server refuses the grant: the error has its code, not the token.
	gs := newGrantServer(t)
	gs.Token = func(_ *http.Request, f url.Values) (int, map[string]any) {
		return http.StatusBadRequest, map[string]any{"error": "invalid_grant", "echo": f.Get("assertion")}
	}
	_, err := authorize(t, &ClientCredentials{Workload: &WorkloadToken{Token: "eyJ.secret-workload.sig"}, HTTPClient: gs.Client()}, gs.URL)
	if err == nil || !strings.Contains(err.Error(), "invalid_grant") || strings.Contains(err.Error(), "secret-workload") {
		t.Fatalf("err = %v, want invalid_grant without the token", err)
	}
}
