package creds

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

const upstreamToken = "upstream-token-3f9a1c77e2"

func TestScrubTakesSecretsOut(t *testing.T) {
	t.Parallel()
	jwt := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
	basic := base64.StdEncoding.EncodeToString([]byte("gw:pa55word-x"))
	h := http.Header{"Authorization": {"Bearer " + upstreamToken}, "X-Api-Key": {"key-0123456789"}}
	cases := []struct{ in, want string }{
		{"upstream said: invalid token " + upstreamToken, "upstream said: invalid token [redacted]"},
		{"header was Authorization: Bearer " + upstreamToken, "header was Authorization: [redacted]"},
		{"header was Authorization: bearer " + upstreamToken, "header was Authorization: bearer [redacted]"},
		{"unknown token Bearer abc.def-ghi rejected", "unknown token Bearer [redacted] rejected"},
		{"got " + jwt + " from somewhere", "got [redacted] from somewhere"},
		{"basic " + basic + " refused; password pa55word-x", "basic [redacted] refused; password [redacted]"},
		{"we use basic authentication", "we use basic authentication"},
		{"api key key-0123456789 unknown", "api key [redacted] unknown"},
		{`Post "https://up.test/mcp?access_token=zzz": refused`, `Post "https://up.test/mcp?access_token=***": refused`},
	}
	secrets := append(HeaderSecrets(h), HeaderSecrets(http.Header{"Authorization": {"Basic " + basic}})...)
	for _, tc := range cases {
		if got := Scrub(errors.New(tc.in), secrets...).Error(); got != tc.want {
			t.Errorf("Scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := ScrubText(tc.in, secrets...); got != tc.want {
			t.Errorf("ScrubText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if Scrub(nil, "x") != nil {
		t.Error("Scrub(nil) is not nil")
	}
}

func TestScrubKeepsWhatTheRelayNeeds(t *testing.T) {
	t.Parallel()
	// A JSON-RPC error keeps its code; data that echoes the token is scrubbed.
	we := &jsonrpc.Error{Code: -32602, Message: "bad token " + upstreamToken, Data: json.RawMessage(`{"token":"` + upstreamToken + `"}`)}
	got := Scrub(fmt.Errorf("calling tool: %w", we), upstreamToken)
	var out *jsonrpc.Error
	if !errors.As(got, &out) || out.Code != -32602 || out.Message != "bad token [redacted]" || string(out.Data) != `{"token":"[redacted]"}` {
		t.Fatalf("jsonrpc error became %#v", got)
	}
	// A refusal stays a refusal.
	r := Scrub(&gateway.Refusal{Code: 1, Message: "no for " + upstreamToken, Reason: gateway.OutcomeDenied}, upstreamToken)
	var rr *gateway.Refusal
	if !errors.As(r, &rr) || rr.Message != "no for [redacted]" || rr.Reason != gateway.OutcomeDenied {
		t.Fatalf("refusal became %#v", r)
	}
	// Cancellation is still recognised, and the unscrubbed error is out of reach.
	inner := &detailed{fmt.Errorf("token %s: %w", upstreamToken, context.Canceled)}
	s := Scrub(fmt.Errorf("call: %w", inner), upstreamToken)
	if !errors.Is(s, context.Canceled) {
		t.Fatal("errors.Is(context.Canceled) lost")
	}
	var d *detailed
	if errors.As(s, &d) {
		t.Fatalf("errors.As reaches the unscrubbed error: %v", d)
	}
}

// detailed is an error type a relay could look for with errors.As.
type detailed struct{ err error }

func (d *detailed) Error() string { return d.err.Error() }
func (d *detailed) Unwrap() error { return d.err }

// An upstream that refuses the gateway's token with a 401 whose challenge and
// body echo the token: the error the MCP client reports (today the status
// alone), once scrubbed, shows neither the token nor the upstream's challenge,
// which would send the client to the upstream's authorization server.
func TestScrubAnUpstream401EchoingTheToken(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", error_description="token %s expired"`, tok))
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "Authorization: %s is not valid", r.Header.Get("Authorization"))
	}))
	t.Cleanup(upstream.Close)
	h := bearer(upstreamToken)
	conn, err := mcpclient.NewConn(mcpclient.Config{Endpoint: upstream.URL, Header: h, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.ListTools(context.Background())
	if err == nil {
		t.Fatal("the upstream's 401 gave no error")
	}
	got := Scrub(err, HeaderSecrets(h)...).Error()
	if strings.Contains(got, upstreamToken) || strings.Contains(got, upstreamToken[:16]) || strings.Contains(got, "invalid_token") {
		t.Fatalf("scrubbed error still shows the token: %q", got)
	}
}

// An upstream tool error whose text echoes the request's Authorization header:
// the result the relay passes on, scrubbed.
func TestScrubAToolErrorEchoingTheHeader(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami"}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("denied for %s", req.Extra.Header.Get("Authorization"))
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	h := bearer(upstreamToken)
	conn, err := mcpclient.NewConn(mcpclient.Config{Endpoint: hs.URL, Header: h})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := conn.CallTool(context.Background(), "whoami", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res)
	if !strings.Contains(string(raw), upstreamToken) {
		t.Fatalf("the upstream did not echo the token (%s): the test shows nothing", raw)
	}
	if got := ScrubText(string(raw), HeaderSecrets(h)...); strings.Contains(got, upstreamToken) || !json.Valid([]byte(got)) {
		t.Fatalf("scrubbed result %s", got)
	}
}

func TestSecretsOfAnUpstream(t *testing.T) {
	t.Parallel()
	cfg := config.UpstreamConfig{
		Headers: map[string]string{"X-Api-Key": "hdr-secret-1"},
		Auth: &config.UpstreamAuth{Values: map[string]any{
			"type": "oauth2", "token_url": "https://auth.test/token", "client_id": "gw-client",
			"client_secret": "auth-secret-2", "private_key_file": "/etc/key.pem",
			"enterprise": map[string]any{"id_token": "nested-secret-3"},
		}},
		TokenExchange: &config.TokenExchangeConfig{ClientSecret: "sts-secret-4"},
	}
	got := strings.Join(Secrets(cfg), " ")
	for _, want := range []string{"hdr-secret-1", "auth-secret-2", "nested-secret-3", "sts-secret-4"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets misses %s: %q", want, got)
		}
	}
	for _, not := range []string{"oauth2", "https://auth.test/token", "gw-client", "/etc/key.pem"} {
		if strings.Contains(got, not) {
			t.Errorf("Secrets takes %s, which is no secret: %q", not, got)
		}
	}
}

// An upstream whose OAuth token endpoint (the gateway's own auth: oauth2
// block) fails and echoes the client secret it got: the error, scrubbed with
// the upstream's Secrets, does not show it.
func TestScrubAnOAuthErrorEchoingTheClientSecret(t *testing.T) {
	t.Parallel()
	const secret = "oauth-client-secret-77"
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		_, pass, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":"secret %s%s is wrong"}`, pass, r.PostForm.Get("client_secret"))
	}))
	t.Cleanup(tokenEndpoint.Close)
	upstream := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(upstream.Close)
	cfg := config.UpstreamConfig{ID: "u", URL: upstream.URL, Auth: &config.UpstreamAuth{Values: map[string]any{
		"type": "oauth2", "token_url": tokenEndpoint.URL, "client_id": "gw", "client_secret": secret,
	}}}
	conn, err := mcpclient.NewConn(mcpclient.Config{Endpoint: upstream.URL, Logger: slog.New(slog.DiscardHandler),
		Auth: &mcpclient.AuthConfig{Type: mcpclient.AuthOAuth2, TokenURL: tokenEndpoint.URL, ClientID: "gw", ClientSecret: secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.ListTools(context.Background())
	if err == nil {
		t.Fatal("no error from a failing token endpoint")
	}
	if !strings.Contains(err.Error(), secret) {
		t.Fatalf("the client's error does not echo the secret (%v): the test shows nothing", err)
	}
	if got := Scrub(err, Secrets(cfg)...).Error(); strings.Contains(got, secret) {
		t.Fatalf("scrubbed error shows the client secret: %q", got)
	}
}
