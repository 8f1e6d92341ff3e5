package client_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/component/mcp/client/oauth"
	"github.com/arvenza/helix/pkg/app"
)

func testKeyPEM(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// TestParseAuthPrivateKeyAndEnterprise covers the oauth2 keys of private_key_jwt
// and enterprise-managed authorization: the forms that work reach the handler,
// and each mistake is named.
func TestParseAuthPrivateKeyAndEnterprise(t *testing.T) {
	key := testKeyPEM(t)
	t.Setenv("HELIX_TEST_PRIVATE_KEY", key)
	file := filepath.Join(t.TempDir(), "client.pem")
	if err := os.WriteFile(file, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}

	for name, in := range map[string]map[string]any{
		"private_key from env": {"type": "oauth2", "discover": true, "client_id": "i", "private_key": "${env:HELIX_TEST_PRIVATE_KEY}", "signing_alg": "ES256"},
		"private_key_file":     {"type": "oauth2", "discover": true, "client_id": "i", "private_key_file": file},
	} {
		a, err := mcpclient.ParseAuth(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		h, err := a.OAuthHandler("http://127.0.0.1:1/mcp", nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cc, ok := h.(*oauth.ClientCredentials)
		if !ok || cc.PrivateKey == nil || cc.PrivateKey.Alg() != "ES256" || cc.ClientSecret != "" {
			t.Fatalf("%s: handler %#v", name, h)
		}
	}

	ent := map[string]any{"idp_token_url": "https://idp.example/token", "idp_client_id": "idp", "id_token": "the-id-token"}
	a, err := mcpclient.ParseAuth(map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "client_secret": "s", "enterprise": ent})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := a.OAuthHandler("http://127.0.0.1:1/mcp", nil)
	if cc, ok := h.(*oauth.ClientCredentials); !ok || cc.Enterprise == nil || cc.Enterprise.IDToken != "the-id-token" || cc.ClientSecret != "s" {
		t.Fatalf("enterprise handler %#v", h)
	}

	a, err = mcpclient.ParseAuth(map[string]any{"type": "oauth2", "discover": true, "workload_token_file": file})
	if err != nil {
		t.Fatal(err)
	}
	h, _ = a.OAuthHandler("http://127.0.0.1:1/mcp", nil)
	if cc, ok := h.(*oauth.ClientCredentials); !ok || cc.Workload == nil || cc.Workload.File != file {
		t.Fatalf("workload handler %#v", h)
	}

	withEnt := func(e map[string]any) map[string]any {
		return map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "enterprise": e}
	}
	for _, tc := range []struct {
		name string
		in   map[string]any
		want string
	}{
		{"key without discover", map[string]any{"type": "oauth2", "token_url": "https://as/token", "client_id": "i", "private_key": key}, "need discover: true"},
		{"key and secret", map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "client_secret": "s", "private_key": key}, "client_secret and a private key exclude each other"},
		{"both key forms", map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "private_key": key, "private_key_file": file}, "exclude each other"},
		{"alg without key", map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "client_secret": "s", "signing_alg": "ES256"}, "signing_alg needs private_key"},
		{"key without client_id", map[string]any{"type": "oauth2", "discover": true, "private_key": key}, "needs client_id"},
		{"alg that does not fit", map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "private_key": key, "signing_alg": "RS256"}, "private_key: private key: signing_alg RS256 does not fit"},
		{"not a key", map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "private_key": "hunter2-not-a-key"}, "private_key: private key: not PEM"},
		{"missing file", map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "private_key_file": file + ".gone"}, "private_key_file:"},
		{"login with a key", map[string]any{"type": "oauth2", "login": true, "private_key": key}, "drop private_key"},
		{"enterprise not a mapping", withEnt(nil), ""},
		{"enterprise a string", map[string]any{"type": "oauth2", "discover": true, "client_id": "i", "enterprise": "yes"}, "enterprise must be a mapping"},
		{"enterprise typo", withEnt(map[string]any{"idp_token_url": "u", "idp_client_id": "c", "id_token": "t", "idp_secret": "x"}), "unknown key(s) idp_secret in enterprise"},
		{"enterprise without id_token", withEnt(map[string]any{"idp_token_url": "u", "idp_client_id": "c"}), "enterprise needs id_token"},
		{"enterprise id_token not a string", withEnt(map[string]any{"idp_token_url": "u", "idp_client_id": "c", "id_token": []any{1}}), "enterprise.id_token must be a string"},
		{"workload without discover", map[string]any{"type": "oauth2", "token_url": "https://as/token", "workload_token": "t"}, "need discover: true"},
		{"both workload forms", map[string]any{"type": "oauth2", "discover": true, "workload_token": "t", "workload_token_file": file}, "workload_token and workload_token_file exclude each other"},
		{"workload and enterprise", map[string]any{"type": "oauth2", "discover": true, "workload_token": "t", "enterprise": ent}, "workload_token and enterprise exclude each other"},
		{"workload with login", map[string]any{"type": "oauth2", "login": true, "workload_token": "t"}, "drop workload_token"},
		{"enterprise without discover", map[string]any{"type": "oauth2", "token_url": "https://as/token", "client_id": "i", "client_secret": "s", "enterprise": ent}, "need discover: true"},
	} {
		_, err := mcpclient.ParseAuth(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), strings.Split(key, "\n")[1]) {
			t.Errorf("%s: error shows the key: %v", tc.name, err)
		}
	}
}

// TestPrivateKeyYAMLError: a bad key in a workflow is a configuration error at the
// step's position, without the key.
func TestPrivateKeyYAMLError(t *testing.T) {
	t.Parallel()
	path := writeYAML(t, "workflows:\n  - id: w\n    trigger: { uri: direct://w }\n    steps:\n"+
		`      - target: {uri: "mcp://localhost:1/t", auth: {type: oauth2, discover: true, client_id: c, private_key: "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n"}}`+"\n")
	_, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, path)
	if err == nil || !strings.Contains(err.Error(), "helix.yaml:5:") || !strings.Contains(err.Error(), "private_key") {
		t.Fatalf("err = %v, want the step's position and private_key named", err)
	}
	if strings.Contains(err.Error(), "c2VjcmV0") {
		t.Errorf("error shows the key: %v", err)
	}
}
