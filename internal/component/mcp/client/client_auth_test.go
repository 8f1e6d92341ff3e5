package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// whoamiServer is a go-sdk MCP server whose tool "whoami" answers with the
// credentials the HTTP request carried, so a test sees what the client sent.
func whoamiServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "auth-test", Version: "1.0.0"}, nil)
	s.AddTool(&sdk.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var seen []string
			if h := req.Extra; h != nil && h.Header != nil {
				for _, k := range []string{"Authorization", "X-Api-Key", "X-Custom-Key"} {
					if v := h.Header.Get(k); v != "" {
						seen = append(seen, k+"="+v)
					}
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(seen, ";")}}}, nil
		})
	return s
}

// guarded serves whoamiServer at /mcp behind check: a request check rejects gets 401.
func guarded(check func(r *http.Request) bool) http.Handler {
	srv := whoamiServer()
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !check(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	return mux
}

// authHarness runs a workflow direct://call → target with an auth-configured mcp://
// endpoint, built the way the target step builds one.
func authHarness(t *testing.T, target string, auth map[string]any) *clientHarness {
	t.Helper()
	cfg, err := mcpclient.ParseAuth(auth)
	if err != nil {
		t.Fatalf("ParseAuth: %v", err)
	}
	return authHarnessConfig(t, target, cfg)
}

// authHarnessConfig is authHarness with a parsed auth config.
func authHarnessConfig(t *testing.T, target string, cfg *mcpclient.AuthConfig) *clientHarness {
	t.Helper()
	u, err := uri.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	comp := mcpclient.New()
	ep, err := comp.EndpointWithAuth(u, cfg)
	if err != nil {
		t.Fatalf("endpoint: %v", err)
	}
	prod, err := ep.CreateProducer()
	if err != nil {
		t.Fatal(err)
	}
	hc := engine.NewContext("mcp-auth-test")
	hc.AddComponent("mcp", comp)
	h := &clientHarness{hc: hc, handled: &recordingHandler{}}
	// The producer is a step with a lifecycle: the engine starts and stops it.
	if err := hc.AddWorkflow(&engine.Workflow{ID: "call", FromURI: "direct://call", Processors: []engine.Processor{prod}, ErrorHandler: h.handled}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := hc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h
}

func hostPort(t testing.TB, rawURL string) string {
	t.Helper()
	return strings.TrimPrefix(strings.TrimPrefix(rawURL, "http://"), "https://")
}

func TestClientAuthBearer(t *testing.T) {
	t.Setenv("HELIX_TEST_MCP_TOKEN", "s3cret")
	srv := httptest.NewServer(guarded(func(r *http.Request) bool {
		return r.Header.Get("Authorization") == "Bearer s3cret"
	}))
	t.Cleanup(srv.Close)
	target := "mcp://" + hostPort(t, srv.URL) + "/mcp/whoami"

	h := authHarness(t, target, map[string]any{"type": "bearer", "token": "${env:HELIX_TEST_MCP_TOKEN}"})
	ex, err := h.call(t, nil, nil)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if got := ex.In().Body(); got != "Authorization=Bearer s3cret" {
		t.Fatalf("tool saw %q, want the bearer token", got)
	}

	bad := authHarness(t, target, map[string]any{"type": "bearer", "token": "wrong"})
	if _, err := bad.call(t, nil, nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("wrong token: err = %v, want an Unauthorized error", err)
	}
}

func TestClientAuthAPIKey(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(guarded(func(r *http.Request) bool {
		return r.Header.Get("X-Custom-Key") == "k-123"
	}))
	t.Cleanup(srv.Close)
	target := "mcp://" + hostPort(t, srv.URL) + "/mcp/whoami"

	h := authHarness(t, target, map[string]any{"type": "api-key", "header": "X-Custom-Key", "key": "k-123"})
	ex, err := h.call(t, nil, nil)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if got := ex.In().Body(); got != "X-Custom-Key=k-123" {
		t.Fatalf("tool saw %q, want the api key in X-Custom-Key", got)
	}

	// The default header is X-API-Key, which this server does not accept.
	def := authHarness(t, target, map[string]any{"type": "api-key", "key": "k-123"})
	if _, err := def.call(t, nil, nil); err == nil {
		t.Fatal("key in the default header was accepted by a server wanting X-Custom-Key")
	}
}

// tokenEndpoint is an OAuth2 client-credentials token endpoint that counts fetches.
type tokenEndpoint struct {
	mu        sync.Mutex
	fetches   int
	expiresIn int
	issued    map[string]bool
}

func (te *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" {
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
	}
	if id != "helix" || secret != "shh" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	te.mu.Lock()
	te.fetches++
	tok := fmt.Sprintf("tok-%d-%s", te.fetches, r.Form.Get("scope"))
	te.issued[tok] = true
	exp := te.expiresIn
	te.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": exp})
}

func (te *tokenEndpoint) valid(tok string) bool {
	te.mu.Lock()
	defer te.mu.Unlock()
	return te.issued[tok]
}

func (te *tokenEndpoint) count() int {
	te.mu.Lock()
	defer te.mu.Unlock()
	return te.fetches
}

func (te *tokenEndpoint) setExpiresIn(s int) {
	te.mu.Lock()
	te.expiresIn = s
	te.mu.Unlock()
}

func TestClientAuthOAuth2(t *testing.T) {
	t.Parallel()
	te := &tokenEndpoint{expiresIn: 3600, issued: map[string]bool{}}
	tokenSrv := httptest.NewServer(te)
	t.Cleanup(tokenSrv.Close)
	srv := httptest.NewServer(guarded(func(r *http.Request) bool {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		return ok && te.valid(tok)
	}))
	t.Cleanup(srv.Close)
	target := "mcp://" + hostPort(t, srv.URL) + "/mcp/whoami"
	auth := map[string]any{
		"type": "oauth2", "token_url": tokenSrv.URL + "/token",
		"client_id": "helix", "client_secret": "shh", "scopes": []any{"tools:read"},
	}

	// A long-lived token is fetched once and reused by every request of every call.
	h := authHarness(t, target, auth)
	for i := range 3 {
		ex, err := h.call(t, nil, nil)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := ex.In().Body(); got != "Authorization=Bearer tok-1-tools:read" {
			t.Fatalf("call %d: tool saw %q, want the first token with its scope", i, got)
		}
	}
	if n := te.count(); n != 1 {
		t.Fatalf("token endpoint hit %d times for 3 calls, want 1 (cached)", n)
	}

	// A token that expires (1s is inside oauth2's 10s early-refresh margin, so it
	// counts as expired at once) is fetched again instead of being sent stale.
	te.setExpiresIn(1)
	short := authHarness(t, target, auth)
	seen := map[any]bool{}
	for i := range 2 {
		ex, err := short.call(t, nil, nil)
		if err != nil {
			t.Fatalf("short-lived call %d: %v", i, err)
		}
		seen[ex.In().Body()] = true
	}
	if n := te.count(); n < 3 {
		t.Fatalf("token endpoint hit %d times in all, want at least 3 (a refresh per expired token)", n)
	}
	if len(seen) != 2 {
		t.Fatalf("the two calls with expiring tokens used %d distinct tokens (%v), want 2", len(seen), seen)
	}

	// Wrong client credentials: the call fails with the token endpoint's answer.
	bad := authHarness(t, target, map[string]any{"type": "oauth2", "token_url": tokenSrv.URL, "client_id": "helix", "client_secret": "nope"})
	if _, err := bad.call(t, nil, nil); err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("bad client secret: err = %v, want invalid_client", err)
	}
}

// testPKI is a CA with a server certificate for 127.0.0.1 and a client certificate.
type testPKI struct {
	dir                          string
	caPool                       *x509.CertPool
	serverCert                   tls.Certificate
	clientCert, clientKey, caPEM string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey := mustKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "helix test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := mustKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	srvDER, srvKey := issue(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	cliDER, cliKey := issue(3, "helix-client", x509.ExtKeyUsageClientAuth, nil)

	p := &testPKI{dir: dir, caPool: x509.NewCertPool()}
	p.caPool.AddCert(caCert)
	p.serverCert = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	p.caPEM = writePEM(t, dir, "ca.crt", "CERTIFICATE", caDER)
	p.clientCert = writePEM(t, dir, "client.crt", "CERTIFICATE", cliDER)
	keyDER, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientKey = writePEM(t, dir, "client.key", "EC PRIVATE KEY", keyDER)
	return p
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestClientAuthMTLS(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	srv := httptest.NewUnstartedServer(guarded(func(r *http.Request) bool {
		return r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && r.TLS.PeerCertificates[0].Subject.CommonName == "helix-client"
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{pki.serverCert},
		ClientCAs:    pki.caPool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// No scheme option: mTLS implies https.
	target := "mcp://" + hostPort(t, srv.URL) + "/mcp/whoami"

	h := authHarness(t, target, map[string]any{"type": "mtls", "cert_file": pki.clientCert, "key_file": pki.clientKey, "ca_file": pki.caPEM})
	ex, err := h.call(t, nil, nil)
	if err != nil {
		t.Fatalf("call over mTLS: %v", err)
	}
	if got := ex.In().Body(); got != "" {
		t.Fatalf("tool saw credential headers %q over mTLS, want none", got)
	}
	if got := ex.In().HeaderString(exchange.HeaderMcpIsError); got != "false" {
		t.Fatalf("HelixMcpIsError = %q", got)
	}

	// Without a client certificate the server refuses the handshake.
	u, _ := uri.Parse(target + "?scheme=https")
	cfg, _, err := mcpclient.ParseURI(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = nil
	conn, err := mcpclient.NewConn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.CallTool(context.Background(), "whoami", nil); err == nil {
		t.Fatal("call without a client certificate succeeded")
	}

	// A missing certificate file is reported when the endpoint is built.
	bad := &mcpclient.AuthConfig{Type: mcpclient.AuthMTLS, CertFile: filepath.Join(pki.dir, "nope.crt"), KeyFile: pki.clientKey}
	if _, err := mcpclient.New().EndpointWithAuth(u, bad); err == nil || !strings.Contains(err.Error(), "nope.crt") {
		t.Fatalf("endpoint with a missing cert file: err = %v, want it named", err)
	}
}

// TestClientCredentialsStayWithTheServer: a server that redirects the client to
// another origin must not receive the connection's credentials there. The
// credentials are added by the client's transport on every request it sends, so
// following such a redirect would hand the token, API key or custom header to a
// host nobody configured; the client refuses the redirect instead.
func TestClientCredentialsStayWithTheServer(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, k := range []string{"Authorization", "X-Api-Key"} {
			if v := r.Header.Get(k); v != "" {
				leaked = append(leaked, k+"="+v)
			}
		}
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(thief.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, thief.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	target := "mcp://" + hostPort(t, redirector.URL) + "/mcp/whoami"

	for _, auth := range []map[string]any{
		{"type": "bearer", "token": "s3cret-bearer"},
		{"type": "api-key", "key": "s3cret-key"},
	} {
		h := authHarness(t, target, auth)
		_, err := h.call(t, nil, nil)
		if err == nil {
			t.Fatalf("%v: the call through a cross-origin redirect succeeded", auth["type"])
		}
		if !strings.Contains(err.Error(), "redirect") {
			t.Errorf("%v: error %q does not say the redirect was refused", auth["type"], err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%v: error shows the credential: %q", auth["type"], err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Fatalf("the other origin received the credentials: %v", leaked)
	}
}
