package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func pemPKCS8(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// must returns k, and panics on err (key generation does not fail).
func must[K any](k K, err error) K {
	if err != nil {
		panic(err)
	}
	return k
}

// verifyAssertion checks a client assertion as an authorization server would:
// signature by pub with alg, then the claims.
func verifyAssertion(t *testing.T, assertion string, pub crypto.PublicKey, alg, clientID, audience string) *jwt.RegisteredClaims {
	t.Helper()
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(assertion, claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{alg}), jwt.WithAudience(audience), jwt.WithIssuer(clientID),
		jwt.WithSubject(clientID), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		t.Fatalf("assertion does not verify: %v", err)
	}
	if claims.ID == "" {
		t.Error("assertion has no jti")
	}
	if life := claims.ExpiresAt.Sub(claims.IssuedAt.Time); life <= 0 || life > assertionLifetime {
		t.Errorf("assertion lives %v, want at most %v", life, assertionLifetime)
	}
	return claims
}

func TestParsePrivateKeyAndSign(t *testing.T) {
	t.Parallel()
	p256 := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	p384 := must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))
	rsaKey := must(rsa.GenerateKey(rand.Reader, 2048))
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecSEC1 := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: must(x509.MarshalECPrivateKey(p256))})
	rsaPKCS1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	for _, tc := range []struct {
		name    string
		pem     []byte
		alg     string
		wantAlg string
		pub     crypto.PublicKey
	}{
		{"P-256 PKCS#8, default alg", pemPKCS8(t, p256), "", "ES256", &p256.PublicKey},
		{"P-256 SEC 1", ecSEC1, "ES256", "ES256", &p256.PublicKey},
		{"P-384", pemPKCS8(t, p384), "", "ES384", &p384.PublicKey},
		{"RSA PKCS#1, default alg", rsaPKCS1, "", "RS256", &rsaKey.PublicKey},
		{"RSA PS256", pemPKCS8(t, rsaKey), "PS256", "PS256", &rsaKey.PublicKey},
		{"Ed25519", pemPKCS8(t, edKey), "", "EdDSA", edKey.Public()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := ParsePrivateKey(tc.pem, tc.alg)
			if err != nil {
				t.Fatal(err)
			}
			if k.Alg() != tc.wantAlg {
				t.Fatalf("alg %s, want %s", k.Alg(), tc.wantAlg)
			}
			a, err := k.Assertion("client-1", []string{"https://as.example", "https://as.example/", "https://as.example/token"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			c := verifyAssertion(t, a, tc.pub, tc.wantAlg, "client-1", "https://as.example")
			if want := []string{"https://as.example", "https://as.example/token"}; !slices.Equal(c.Audience, want) {
				t.Errorf("aud %v, want %v (the issuer once, and the token endpoint)", c.Audience, want)
			}
			if strings.Contains(k.String(), "PRIVATE") {
				t.Errorf("String shows the key: %s", k)
			}
		})
	}
}

func TestParsePrivateKeyRefusals(t *testing.T) {
	t.Parallel()
	p256 := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	small := must(rsa.GenerateKey(rand.Reader, 1024))
	good := pemPKCS8(t, p256)
	// A PEM block that decodes but holds garbage: its base64 must not reach the
	// error.
	garbage := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("not-a-key-SECRETSECRETSECRET")})
	for _, tc := range []struct {
		name, alg, want string
		pem             []byte
	}{
		{"not PEM", "", "not PEM", []byte("MHcCAQEEIB-secret-material")},
		{"certificate", "", `"CERTIFICATE" is not a private key`, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})},
		{"garbage in the block", "", "private key:", garbage},
		{"alg that does not fit the key", "RS256", "signing_alg RS256 does not fit this key (use ES256)", good},
		{"unknown alg", "HS256", "signing_alg HS256 does not fit", good},
		{"small RSA key", "", "RSA key has 1024 bits", pemPKCS8(t, small)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParsePrivateKey(tc.pem, tc.alg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			for _, line := range strings.Split(string(tc.pem), "\n") {
				if len(line) > 8 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
					t.Errorf("error quotes the key: %v", err)
				}
			}
			if strings.Contains(err.Error(), "secret-material") || strings.Contains(err.Error(), "SECRETSECRET") {
				t.Errorf("error quotes the key: %v", err)
			}
		})
	}
}

// TestClientCredentialsPrivateKeyJWT runs the discovery and the token request of a
// client that authenticates with a signed assertion: the authorization server
// verifies it with the public key.
func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	priv := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	key, err := ParsePrivateKey(pemPKCS8(t, priv), "")
	if err != nil {
		t.Fatal(err)
	}
	gs := newGrantServer(t)
	gs.Meta = func(m map[string]any) {
		m["grant_types_supported"] = []string{"client_credentials"}
		m["token_endpoint_auth_methods_supported"] = []string{"private_key_jwt"}
		m["token_endpoint_auth_signing_alg_values_supported"] = []string{"ES256"}
	}
	var jtis []string
	gs.Token = func(r *http.Request, f url.Values) (int, map[string]any) {
		if _, _, basic := r.BasicAuth(); basic || f.Has("client_secret") {
			t.Error("a client with a key sent a secret")
		}
		if f.Get("grant_type") != "client_credentials" || f.Get("client_assertion_type") != clientAssertionType ||
			f.Get("client_id") != "jwt-client" || f.Get("resource") != gs.URL+"/mcp" {
			t.Errorf("token request %v", f)
		}
		c := verifyAssertion(t, f.Get("client_assertion"), &priv.PublicKey, "ES256", "jwt-client", gs.URL)
		jtis = append(jtis, c.ID)
		return http.StatusOK, map[string]any{"access_token": "at-" + c.ID, "token_type": "Bearer", "expires_in": 3600}
	}
	cc := &ClientCredentials{ClientID: "jwt-client", PrivateKey: key, HTTPClient: gs.Client()}
	tok, err := authorize(t, cc, gs.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "at-") {
		t.Fatalf("token %q", tok)
	}
	// A second authorization (the server refused the token) signs a new assertion.
	if _, err := authorize(t, cc, gs.URL); err != nil {
		t.Fatal(err)
	}
	if len(jtis) != 2 || jtis[0] == jtis[1] {
		t.Errorf("jti of the two assertions: %v, want two different ones", jtis)
	}
}

func TestClientCredentialsPrivateKeyJWTRefusals(t *testing.T) {
	t.Parallel()
	priv := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	key, err := ParsePrivateKey(pemPKCS8(t, priv), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		meta   func(map[string]any)
		answer map[string]any
		want   string
	}{
		{"server takes only secrets", func(m map[string]any) {
			m["token_endpoint_auth_methods_supported"] = []string{"client_secret_basic"}
		}, nil, "does not take private_key_jwt client authentication (it takes client_secret_basic)"},
		{"server takes other algorithms", func(m map[string]any) {
			m["token_endpoint_auth_signing_alg_values_supported"] = []string{"RS256"}
		}, nil, "takes client assertions signed with RS256, not ES256"},
		{"server refuses the assertion and echoes it", nil, map[string]any{"error": "invalid_client", "error_description": "bad assertion"}, "invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gs := newGrantServer(t)
			gs.Meta = tc.meta
			var sent string
			gs.Token = func(_ *http.Request, f url.Values) (int, map[string]any) {
				sent = f.Get("client_assertion")
				ans := map[string]any{"echo": sent}
				for k, v := range tc.answer {
					ans[k] = v
				}
				return http.StatusUnauthorized, ans
			}
			_, err := authorize(t, &ClientCredentials{ClientID: "jwt-client", PrivateKey: key, HTTPClient: gs.Client()}, gs.URL)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.answer == nil && len(gs.requests()) != 0 {
				t.Error("a token request was made to a server that said it would refuse it")
			}
			if sent != "" && strings.Contains(err.Error(), sent) {
				t.Errorf("error shows the assertion: %v", err)
			}
		})
	}
}
