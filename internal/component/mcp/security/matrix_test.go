package security

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// spec §15: two servers with independent keys, limits and tool lists.
func specPair(t *testing.T, logs *logBuffer) (public, admin *Stack) {
	public = mustStack(t, Config{
		ServerID:  "public-tools",
		APIKeys:   []string{"mcp-public-key"},
		RateLimit: 120,
		Logger:    logs.logger(),
	}, nil)
	admin = mustStack(t, Config{
		ServerID:     "admin-tools",
		APIKeys:      []string{"mcp-admin-key"},
		RateLimit:    30,
		BlockedTools: []string{"summarizer"},
		Logger:       logs.logger(),
	}, nil)
	return public, admin
}

func TestMatrixAuthentication(t *testing.T) {
	logs := &logBuffer{}
	public, admin := specPair(t, logs)
	pub, adm := newMCPServer(t, public), newMCPServer(t, admin)

	cases := []struct {
		name      string
		url       string
		hdr       http.Header
		want      int
		challenge string // exact WWW-Authenticate on 401
	}{
		{"no key", pub.URL, nil, 401, `Bearer realm="helix-mcp"`},
		{"wrong bearer key", pub.URL, hdr("Authorization", "Bearer nope"), 401, `Bearer realm="helix-mcp", error="invalid_token"`},
		{"wrong x-api-key", pub.URL, hdr("X-API-Key", "nope"), 401, `Bearer realm="helix-mcp", error="invalid_token"`},
		{"malformed authorization", pub.URL, hdr("Authorization", "Basic bWNwLXB1YmxpYy1rZXk6"), 401, `Bearer realm="helix-mcp", error="invalid_token"`},
		{"public key on admin server", adm.URL, hdr("Authorization", "Bearer mcp-public-key"), 401, `Bearer realm="helix-mcp", error="invalid_token"`},
		{"admin key on public server", pub.URL, hdr("X-API-Key", "mcp-admin-key"), 401, `Bearer realm="helix-mcp", error="invalid_token"`},
		{"key prefix is not the key", pub.URL, hdr("X-API-Key", "mcp-public"), 401, `Bearer realm="helix-mcp", error="invalid_token"`},
		{"public bearer", pub.URL, hdr("Authorization", "Bearer mcp-public-key"), 200, ""},
		{"public bearer lower-case scheme", pub.URL, hdr("Authorization", "bearer mcp-public-key"), 200, ""},
		{"public x-api-key", pub.URL, hdr("X-API-Key", "mcp-public-key"), 200, ""},
		{"admin bearer", adm.URL, hdr("Authorization", "Bearer mcp-admin-key"), 200, ""},
		{"admin x-api-key", adm.URL, hdr("X-API-Key", "mcp-admin-key"), 200, ""},
		{"wrong bearer but valid x-api-key", adm.URL, hdr("Authorization", "Bearer x", "X-API-Key", "mcp-admin-key"), 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawInit(t, tc.url+"/mcp", tc.hdr)
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d (body %q)", resp.StatusCode, tc.want, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tc.challenge)
			}
		})
	}

	out := logs.String()
	for _, secret := range []string{"mcp-public-key", "mcp-admin-key", "nope", "bWNw"} {
		if strings.Contains(out, secret) {
			t.Errorf("log leaks credential %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"server=public-tools", "server=admin-tools", "client=127.0.0.1", `reason="missing credentials"`, `reason="invalid api key"`, "status=401"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestMatrixGoSDKClientAndTools(t *testing.T) {
	logs := &logBuffer{}
	public, admin := specPair(t, logs)
	pub, adm := newMCPServer(t, public), newMCPServer(t, admin)

	// Both header styles carry a whole session (initialize, list, call, SSE).
	for _, h := range []http.Header{hdr("Authorization", "Bearer mcp-public-key"), hdr("X-API-Key", "mcp-public-key")} {
		cs := mustConnect(t, pub, h)
		names := toolNames(t, cs)
		slices.Sort(names)
		if want := []string{"admin-tool", "code-assistant", "summarizer"}; !slices.Equal(names, want) {
			t.Errorf("public tools = %v, want %v", names, want)
		}
		if text, isErr := callTool(t, cs, "summarizer"); isErr || text != "ran summarizer" {
			t.Errorf("public summarizer = %q (isError %v)", text, isErr)
		}
	}

	// The go-sdk client fails to connect without the right key.
	if _, err := connect(t, adm, hdr("Authorization", "Bearer mcp-public-key")); err == nil {
		t.Fatal("public key connected to the admin server")
	}

	cs := mustConnect(t, adm, hdr("X-API-Key", "mcp-admin-key"))
	names := toolNames(t, cs)
	if slices.Contains(names, "summarizer") || !slices.Contains(names, "admin-tool") {
		t.Errorf("admin tools = %v, want summarizer hidden and admin-tool listed", names)
	}
	text, isErr := callTool(t, cs, "summarizer")
	if !isErr || text != "tool summarizer is blocked" {
		t.Errorf("admin summarizer = %q (isError %v), want isError %q", text, isErr, "tool summarizer is blocked")
	}
	if text, isErr := callTool(t, cs, "admin-tool"); isErr || text != "ran admin-tool" {
		t.Errorf("admin admin-tool = %q (isError %v)", text, isErr)
	}
}

func TestMatrixTrustedProxy(t *testing.T) {
	// The test client connects from loopback, which is listed as a proxy.
	s := mustStack(t, Config{
		ServerID:       "behind-gateway",
		APIKeys:        []string{"k"},
		TrustedProxies: []string{"127.0.0.1", "::1"},
	}, nil)
	ts := newMCPServer(t, s)
	if resp, body := rawInit(t, ts.URL+"/mcp", nil); resp.StatusCode != 200 {
		t.Fatalf("trusted proxy without key: status %d (%s)", resp.StatusCode, body)
	}
	cs := mustConnect(t, ts, hdr("X-Forwarded-For", "198.51.100.7"))
	if len(toolNames(t, cs)) != 3 {
		t.Error("trusted proxy session lists the wrong tools")
	}
}

func TestMatrixSpoofedForwardedFor(t *testing.T) {
	clock := newFakeClock()
	// 10.9.9.9 is the only proxy; the test client (127.0.0.1) is not it.
	s := mustStack(t, Config{
		APIKeys:        []string{"k"},
		TrustedProxies: []string{"10.9.9.9"},
		RateLimit:      3,
	}, clock)
	ts := newStatelessMCPServer(t, s)
	for _, xff := range []string{"10.9.9.9", "127.0.0.1", "10.9.9.9, 10.9.9.9"} {
		if resp, _ := rawInit(t, ts.URL+"/mcp", hdr("X-Forwarded-For", xff)); resp.StatusCode != 401 {
			t.Errorf("spoofed X-Forwarded-For %q without key: status %d, want 401", xff, resp.StatusCode)
		}
	}
	// A keyed client cannot escape its bucket by changing X-Forwarded-For.
	for i := range 4 {
		h := hdr("X-API-Key", "k", "X-Forwarded-For", "203.0.113."+string(rune('1'+i)))
		resp, _ := rawInit(t, ts.URL+"/mcp", h)
		if want := map[bool]int{true: 200, false: 429}[i < 3]; resp.StatusCode != want {
			t.Errorf("keyed request %d: status %d, want %d", i+1, resp.StatusCode, want)
		}
	}

	// Without keys the bucket is the peer address; a forged header does not
	// pick a new one.
	open := mustStack(t, Config{TrustedProxies: []string{"10.9.9.9"}, RateLimit: 2}, clock)
	ots := newStatelessMCPServer(t, open)
	for i := range 3 {
		resp, _ := rawInit(t, ots.URL+"/mcp", hdr("X-Forwarded-For", "198.51.100."+string(rune('1'+i))))
		if want := map[bool]int{true: 200, false: 429}[i < 2]; resp.StatusCode != want {
			t.Errorf("open request %d: status %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

func TestMatrixBodyLimit(t *testing.T) {
	s := mustStack(t, Config{APIKeys: []string{"k"}, MaxBodyBytes: 1024}, nil)
	ts := newMCPServer(t, s)
	key := hdr("X-API-Key", "k")
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`

	// With Content-Length: refused before anything is read.
	if resp, _ := rawPost(t, ts.URL+"/mcp", key, strings.NewReader(big)); resp.StatusCode != 413 {
		t.Errorf("oversize with Content-Length: status %d, want 413", resp.StatusCode)
	}
	// Without Content-Length (chunked): io.MultiReader hides the length.
	resp, _ := rawPost(t, ts.URL+"/mcp", key, io.MultiReader(strings.NewReader(big)))
	if resp.StatusCode != 413 {
		t.Errorf("oversize chunked: status %d, want 413", resp.StatusCode)
	}
	// A body under the limit reaches the MCP handler, chunked or not.
	if resp, body := rawInit(t, ts.URL+"/mcp", key); resp.StatusCode != 200 {
		t.Errorf("small body: status %d (%s)", resp.StatusCode, body)
	}
	resp, body := rawPost(t, ts.URL+"/mcp", key, io.MultiReader(strings.NewReader(initializeBody)))
	if resp.StatusCode != 200 {
		t.Errorf("small chunked body: status %d (%s)", resp.StatusCode, body)
	}
	deleteSession(t, ts.URL+"/mcp", key, resp)

	// The default limit is 4 MiB; a negative limit switches it off.
	def := mustStack(t, Config{}, nil)
	dts := newMCPServer(t, def)
	huge := bytes.Repeat([]byte("x"), int(DefaultMaxBodyBytes)+1)
	if resp, _ := rawPost(t, dts.URL+"/mcp", nil, bytes.NewReader(huge)); resp.StatusCode != 413 {
		t.Errorf("default limit: status %d, want 413", resp.StatusCode)
	}
	unl := mustStack(t, Config{MaxBodyBytes: -1}, nil)
	uts := newStatelessMCPServer(t, unl)
	padded := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},` +
		`"clientInfo":{"name":"raw","version":"1"},"_meta":{"pad":"` + strings.Repeat("x", int(DefaultMaxBodyBytes)) + `"}}}`
	if resp, body := rawPost(t, uts.URL+"/mcp", nil, strings.NewReader(padded)); resp.StatusCode != 200 {
		t.Errorf("unlimited body: status %d (%.200s)", resp.StatusCode, body)
	}
}

func TestMatrixCORS(t *testing.T) {
	s := mustStack(t, Config{APIKeys: []string{"k"}, CORSOrigins: []string{"http://localhost:3000", "http://localhost:5173"}}, nil)
	ts := newMCPServer(t, s)

	preflight := func(url, origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, url+"/mcp", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
		resp, _ := do(t, req)
		return resp
	}
	if resp := preflight(ts.URL, "http://evil.example"); resp.StatusCode != 403 {
		t.Errorf("preflight from unlisted origin: status %d, want 403", resp.StatusCode)
	}
	resp := preflight(ts.URL, "http://localhost:5173")
	if resp.StatusCode != 204 {
		t.Fatalf("preflight from listed origin: status %d, want 204", resp.StatusCode)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "http://localhost:5173" {
		t.Errorf("Allow-Origin = %q", got)
	}
	if got := resp.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(got, "POST") || !strings.Contains(got, "DELETE") {
		t.Errorf("Allow-Methods = %q", got)
	}
	allowH := resp.Header.Get("Access-Control-Allow-Headers")
	for _, h := range []string{"Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID", "X-API-Key"} {
		if !strings.Contains(allowH, h) {
			t.Errorf("Allow-Headers %q lacks %s", allowH, h)
		}
	}
	if !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("preflight does not expose Mcp-Session-Id")
	}

	// An actual request from a listed origin exposes Mcp-Session-Id, even on
	// a 401 (the page must be able to read errors).
	for _, h := range []http.Header{hdr("Origin", "http://localhost:3000", "X-API-Key", "k"), hdr("Origin", "http://localhost:3000")} {
		resp, _ := rawInit(t, ts.URL+"/mcp", h)
		if resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
			!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
			t.Errorf("status %d: actual response lacks CORS headers: %v", resp.StatusCode, resp.Header)
		}
	}
	// An actual request from an unlisted origin is refused.
	if resp, _ := rawInit(t, ts.URL+"/mcp", hdr("Origin", "http://evil.example", "X-API-Key", "k")); resp.StatusCode != 403 {
		t.Errorf("actual request from unlisted origin: status %d, want 403", resp.StatusCode)
	}

	// Without cors_origins no CORS header is ever sent.
	plain := newMCPServer(t, mustStack(t, Config{APIKeys: []string{"k"}}, nil))
	for _, r := range []*http.Response{preflight(plain.URL, "http://localhost:3000")} {
		for k := range r.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("CORS header %s sent without cors_origins", k)
			}
		}
	}
	r2, _ := rawInit(t, plain.URL+"/mcp", hdr("Origin", "http://localhost:3000", "X-API-Key", "k"))
	for k := range r2.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("CORS header %s sent without cors_origins", k)
		}
	}
}

func TestMatrixRateLimit(t *testing.T) {
	clock := newFakeClock()
	s := mustStack(t, Config{APIKeys: []string{"key-a", "key-b"}, RateLimit: 60}, clock)
	ts := newStatelessMCPServer(t, s)
	a, b := hdr("X-API-Key", "key-a"), hdr("Authorization", "Bearer key-b")

	for i := range 60 {
		if resp, body := rawInit(t, ts.URL+"/mcp", a); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d (%s)", i+1, resp.StatusCode, body)
		}
	}
	resp, _ := rawInit(t, ts.URL+"/mcp", a)
	if resp.StatusCode != 429 {
		t.Fatalf("61st request: status %d, want 429", resp.StatusCode)
	}
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1 (one token per second at 60/min)", got)
	}
	// Another key has its own bucket, whatever the shared address.
	if resp, _ := rawInit(t, ts.URL+"/mcp", b); resp.StatusCode != 200 {
		t.Errorf("other key: status %d, want 200", resp.StatusCode)
	}
	// Tokens refill at rate_limit per minute.
	clock.Advance(time.Second)
	if resp, _ := rawInit(t, ts.URL+"/mcp", a); resp.StatusCode != 200 {
		t.Errorf("after refill: status %d, want 200", resp.StatusCode)
	}
	if resp, _ := rawInit(t, ts.URL+"/mcp", a); resp.StatusCode != 429 {
		t.Errorf("refill gave more than one token: status %d", resp.StatusCode)
	}
}

// rawInit posts an initialize request and, when it opened a session, ends
// it again so that no server session outlives the test.
func rawInit(t *testing.T, url string, h http.Header) (*http.Response, string) {
	t.Helper()
	resp, body := rawPost(t, url, h, nil)
	deleteSession(t, url, h, resp)
	return resp, body
}

func deleteSession(t *testing.T, url string, h http.Header, resp *http.Response) {
	t.Helper()
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		return
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	for k, vs := range h {
		req.Header[k] = vs
	}
	req.Header.Set("Mcp-Session-Id", id)
	_, _ = do(t, req)
}
