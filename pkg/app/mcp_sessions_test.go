package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/arvenza/helix/internal/testtools"
)

// Session ownership and limits (issue 10), through the real security stack, over
// Helix's Streamable HTTP transport, the go-sdk's (http_transport: sdk) and SSE.
// The clients here speak the wire protocol by hand so that a test can present one
// principal's credentials on another principal's session.

// sessionTransports are the ways a client opens a session on a Helix server.
var sessionTransports = []string{"helix", "sdk", "sse"}

// rawSession is one MCP session opened by hand.
type rawSession struct {
	t         *testing.T
	c         *http.Client
	base      string // http://host:port
	transport string
	id        string // Mcp-Session-Id, or the SSE sessionid
	endpoint  string // SSE: where messages are posted
	auth      []string
	events    <-chan sseEvent // SSE: the event stream
	nextID    int
	cancel    context.CancelFunc
}

type sseEvent struct {
	name, data string
}

// readSSE turns an event stream into events; the channel closes when the stream ends.
func readSSE(body io.ReadCloser) <-chan sseEvent {
	ch := make(chan sseEvent, 16)
	go func() {
		defer close(ch)
		defer body.Close()
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" || ev.data != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event:"):
				ev.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				ev.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			}
		}
	}()
	return ch
}

func newSessionClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// openSession opens a session over transport presenting auth (header, value pairs).
// It returns nil with the refusal's status and body when the server refuses it.
func openSession(t *testing.T, c *http.Client, base, transport string, auth ...string) (*rawSession, int, string) {
	t.Helper()
	s := &rawSession{t: t, c: c, base: base, transport: transport, auth: auth, nextID: 100}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	if transport == "sse" {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse", nil)
		req.Header.Set("Accept", "text/event-stream")
		setPairs(req, auth)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET /sse: %v", err)
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			return nil, resp.StatusCode, string(b)
		}
		s.cancel = cancel
		s.events = readSSE(resp.Body)
		ev, ok := s.nextEvent()
		if !ok || ev.name != "endpoint" {
			t.Fatalf("SSE: first event %+v (stream open: %v), want the endpoint", ev, ok)
		}
		s.endpoint = base + ev.data
		_, s.id, _ = strings.Cut(ev.data, "sessionid=")
		if status, body := s.send(init); status != http.StatusOK {
			t.Fatalf("SSE initialize: %d %s", status, body)
		}
	} else {
		status, body, hdr := s.post(init, "")
		if status != http.StatusOK {
			return nil, status, body
		}
		s.id = hdr.Get("Mcp-Session-Id")
		if s.id == "" {
			t.Fatalf("%s: initialize answered without a session id: %s", transport, body)
		}
	}
	if status, body := s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("%s: notifications/initialized: %d %s", transport, status, body)
	}
	return s, http.StatusOK, ""
}

func setPairs(req *http.Request, kv []string) {
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
}

func (s *rawSession) nextEvent() (sseEvent, bool) {
	select {
	case ev, ok := <-s.events:
		return ev, ok
	case <-time.After(testtools.StartupBound):
		s.t.Fatalf("SSE session %s: no event for 60s", s.id)
		return sseEvent{}, false
	}
}

// post sends body over Streamable HTTP (to the session sid, if any) with the
// session's credentials and returns status, the JSON-RPC answer and the headers.
func (s *rawSession) post(body, sid string, auth ...string) (int, string, http.Header) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	if auth == nil {
		auth = s.auth
	}
	setPairs(req, auth)
	resp, err := s.c.Do(req)
	if err != nil {
		s.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for ev := range readSSE(resp.Body) {
			if strings.Contains(ev.data, `"id"`) && (strings.Contains(ev.data, `"result"`) || strings.Contains(ev.data, `"error"`)) {
				return resp.StatusCode, ev.data, resp.Header
			}
		}
		return resp.StatusCode, "", resp.Header
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// postSSE posts body to an SSE message endpoint with auth and returns the status.
func (s *rawSession) postSSE(endpoint, body string, auth []string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	setPairs(req, auth)
	resp, err := s.c.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v", endpoint, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// send sends one message on the session with its own credentials. For a request
// it returns 200 and the answer; for a notification the transport's status (202).
func (s *rawSession) send(body string) (int, string) {
	s.t.Helper()
	return s.sendAs(body, s.auth)
}

// sendAs is send presenting other credentials (nil: none).
func (s *rawSession) sendAs(body string, auth []string) (int, string) {
	s.t.Helper()
	if auth == nil {
		auth = []string{}
	}
	if s.transport != "sse" {
		status, answer, _ := s.post(body, s.id, auth...)
		return status, answer
	}
	status, text := s.postSSE(s.endpoint, body, auth)
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	if status != http.StatusAccepted || len(m.ID) == 0 {
		return status, text
	}
	for {
		ev, ok := s.nextEvent()
		if !ok {
			return http.StatusGone, "the event stream ended"
		}
		var got struct {
			ID json.RawMessage `json:"id"`
		}
		if ev.name == "message" && json.Unmarshal([]byte(ev.data), &got) == nil && string(got.ID) == string(m.ID) {
			return http.StatusOK, ev.data
		}
	}
}

// callTool calls tool on the session and returns the status and the answer.
func (s *rawSession) callTool(tool string) (int, string) {
	s.t.Helper()
	s.nextID++
	return s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, s.nextID, tool))
}

// alive reports whether the session still answers a ping.
func (s *rawSession) alive() bool {
	s.t.Helper()
	s.nextID++
	status, body := s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, s.nextID))
	if status == http.StatusOK && strings.Contains(body, `"result"`) {
		return true
	}
	if status != http.StatusNotFound && status != http.StatusGone {
		s.t.Fatalf("%s session %s: ping answered %d %s", s.transport, s.id, status, body)
	}
	return false
}

// blocker is an HTTP endpoint a workflow calls; each call blocks until released,
// so that a test holds a tool call in flight for as long as it needs.
type blocker struct {
	srv     *httptest.Server
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBlocker(t *testing.T) *blocker {
	b := &blocker{entered: make(chan struct{}, 16), release: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.entered <- struct{}{}
		select {
		case <-b.release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "released")
	}))
	t.Cleanup(func() { b.open(); b.srv.Close() })
	return b
}

func (b *blocker) open() { b.once.Do(func() { close(b.release) }) }

// waitEntered waits until a call reached the blocker.
func (b *blocker) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-b.entered:
	case <-time.After(testtools.StartupBound):
		t.Fatal("the blocking tool was never called")
	}
}

// The attack of issue 10: a caller with scope "mcp" posts to the SSE session of a
// caller holding "admin" and so runs admin_tool with the other caller's scopes.
// Another principal's message must be refused like an unknown session (404).
func TestSSESessionHijackAcrossOAuthSubjects(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	a := startSecure(t, `
helix:
  management: { enabled: false }
`+fourWorkflows+`
mcps:
  - id: secured
    addr: "127.0.0.1:0"
    expose: [code-assistant, admin-tool]
    auth:
      issuer: `+testIssuer+`
      resource_url: `+testResource+`
      jwks_url: `+is.jwks.URL+`/certs
      scopes:
        "*": [mcp]
        admin-tool: [admin]
`, nil)
	base := serverURL(t, a, "secured")
	c := newSessionClient(t)
	rootAuth := []string{"Authorization", "Bearer " + is.token(t, nil, jwt.MapClaims{"sub": "root", "scope": "mcp admin"})}
	userAuth := []string{"Authorization", "Bearer " + is.token(t, nil, jwt.MapClaims{"sub": "mallory", "scope": "mcp"})}

	root, status, body := openSession(t, c, base, "sse", rootAuth...)
	if root == nil {
		t.Fatalf("root's SSE session: %d %s", status, body)
	}
	attack := `{"jsonrpc":"2.0","id":666,"method":"tools/call","params":{"name":"admin_tool","arguments":{}}}`
	if status, body := root.postSSE(root.endpoint, attack, userAuth); status != http.StatusNotFound {
		t.Fatalf("mallory posting admin_tool to root's SSE session: %d %q, want 404", status, body)
	}
	// The owner's own session is unaffected, and its next answer is its own.
	if status, answer := root.callTool("admin_tool"); status != http.StatusOK || !strings.Contains(answer, "admin done") {
		t.Fatalf("root's own call: %d %s", status, answer)
	}
	// Mallory's own session cannot run admin_tool.
	own, status, body := openSession(t, c, base, "sse", userAuth...)
	if own == nil {
		t.Fatalf("mallory's SSE session: %d %s", status, body)
	}
	if _, answer := own.callTool("admin_tool"); strings.Contains(answer, "admin done") || !strings.Contains(answer, "admin_tool") {
		t.Fatalf("mallory's admin_tool on her own session: %s", answer)
	}
}

// sessionServers declares one server per Streamable HTTP implementation with the
// given extra settings; SSE sessions are opened on the helix one (its /sse), or on
// a transport: sse server when sseOwn is set.
func sessionServers(prefix, extra string, sseOwn bool) string {
	out := ""
	for _, tr := range []string{"helix", "sdk", "sse"} {
		if tr == "sse" && !sseOwn {
			continue
		}
		out += fmt.Sprintf(`
  - id: %s-%s
    addr: "127.0.0.1:0"
    expose: [code-assistant, block]`, prefix, tr)
		switch tr {
		case "sdk":
			out += "\n    http_transport: sdk"
		case "sse":
			out += "\n    transport: sse"
		}
		out += "\n" + extra
	}
	return out
}

// blockWorkflow is a tool whose call waits for the blocker to release it.
func blockWorkflow(b *blocker) string {
	return `
  - id: block
    description: "Waits until the test releases it"
    trigger: direct://block
    steps:
      - target: ` + b.srv.URL + `/block?httpMethod=GET
`
}

// Sessions belong to the principal that opened them: another API key, a trusted
// proxy without a key, or another OAuth subject naming the session id gets 404,
// exactly like an unknown session; the owner keeps using it.
func TestSessionOwnership(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	b := newBlocker(t)
	keys := `    api_keys: [key-a, key-b]
    trusted_proxies: ["127.0.0.1", "::1"]
`
	oauth := `    auth:
      issuer: ` + testIssuer + `
      resource_url: ` + testResource + `
      jwks_url: ` + is.jwks.URL + `/certs
`
	a := startSecure(t, `
helix:
  management: { enabled: false }
`+fourWorkflows+blockWorkflow(b)+`
mcps:`+sessionServers("keys", keys, false)+sessionServers("oauth", oauth, false)+sessionServers("open", "", false), nil)
	c := newSessionClient(t)
	keyA := []string{"X-API-Key", "key-a"}
	keyB := []string{"Authorization", "Bearer key-b"}
	ada := []string{"Authorization", "Bearer " + is.token(t, nil, jwt.MapClaims{"sub": "ada"})}
	bob := []string{"Authorization", "Bearer " + is.token(t, nil, jwt.MapClaims{"sub": "bob"})}
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`

	for _, transport := range sessionTransports {
		t.Run(transport, func(t *testing.T) {
			server := func(prefix string) string {
				if transport == "sdk" {
					return serverURL(t, a, prefix+"-sdk")
				}
				return serverURL(t, a, prefix+"-helix")
			}
			check := func(s *rawSession, who string, auth []string, want int) {
				t.Helper()
				status, body := s.sendAs(ping, auth)
				if status != want {
					t.Errorf("%s on the session: %d %q, want %d", who, status, body, want)
				}
				if want == http.StatusNotFound && strings.Contains(strings.ToLower(body), "another") {
					t.Errorf("%s: the refusal tells the session exists: %q", who, body)
				}
			}
			owned, status, body := openSession(t, c, server("keys"), transport, keyA...)
			if owned == nil {
				t.Fatalf("open with key-a: %d %s", status, body)
			}
			check(owned, "another key", keyB, http.StatusNotFound)
			check(owned, "a trusted proxy without a key", nil, http.StatusNotFound)
			check(owned, "the owner", keyA, http.StatusOK)
			if transport != "sse" {
				// Neither may close it or open its stream.
				for _, method := range []string{http.MethodDelete, http.MethodGet} {
					req, _ := http.NewRequest(method, owned.base+"/mcp", nil)
					req.Header.Set("Mcp-Session-Id", owned.id)
					req.Header.Set("Accept", "text/event-stream")
					setPairs(req, keyB)
					resp, err := c.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNotFound {
						t.Errorf("%s by another key: %d, want 404", method, resp.StatusCode)
					}
				}
				check(owned, "the owner after the attempts", keyA, http.StatusOK)
			}

			// A session a trusted proxy opened without a key is not a key holder's.
			proxied, status, body := openSession(t, c, server("keys"), transport)
			if proxied == nil {
				t.Fatalf("open through the trusted proxy: %d %s", status, body)
			}
			check(proxied, "a key holder on the proxy's session", keyA, http.StatusNotFound)
			check(proxied, "the proxy", nil, http.StatusOK)

			mine, status, body := openSession(t, c, server("oauth"), transport, ada...)
			if mine == nil {
				t.Fatalf("open with ada's token: %d %s", status, body)
			}
			check(mine, "another subject", bob, http.StatusNotFound)
			check(mine, "the subject", ada, http.StatusOK)

			// Anonymous servers have no owners.
			open, status, body := openSession(t, c, server("open"), transport)
			if open == nil {
				t.Fatalf("open anonymously: %d %s", status, body)
			}
			check(open, "another anonymous client", []string{"X-Client", "other"}, http.StatusOK)
		})
	}
}

// jsonRPCLimitError checks a refused session: 503 and a JSON-RPC error naming limit.
func jsonRPCLimitError(t *testing.T, status int, body, limit string) {
	t.Helper()
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if status != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &m) != nil || m.JSONRPC != "2.0" ||
		m.Error == nil || !strings.Contains(m.Error.Message, limit) {
		t.Fatalf("refused session: %d %q, want 503 with a JSON-RPC error naming %s", status, body, limit)
	}
}

// inFlight starts a call of the block tool on s and returns where its answer arrives.
func inFlight(t *testing.T, s *rawSession, b *blocker) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		_, answer := s.callTool("block")
		done <- answer
	}()
	b.waitEntered(t)
	return done
}

func released(t *testing.T, ch <-chan string) {
	t.Helper()
	select {
	case answer := <-ch:
		if !strings.Contains(answer, "released") || strings.Contains(answer, `"isError":true`) {
			t.Errorf("the call in flight was answered %q", answer)
		}
	case <-time.After(testtools.StartupBound):
		t.Fatal("the call in flight was never answered")
	}
}

// openAtCap opens a session on a server at its session cap, where opening evicts
// the session idle longest. A request counts as in flight until its handler
// returns, which is a moment after the client has read the answer: a session whose
// last request was just answered may still be busy then, and the server rightly
// answers 503 "retry later". openAtCap retries for a while, as a client would; the
// tests check which session was evicted.
func openAtCap(t *testing.T, c *http.Client, base, transport string, auth ...string) *rawSession {
	t.Helper()
	deadline := time.Now().Add(testtools.StartupBound)
	for {
		s, status, body := openSession(t, c, base, transport, auth...)
		if s != nil {
			return s
		}
		if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("open: %d %s", status, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// max_sessions: at the cap the session idle longest is evicted; sessions with a call
// in flight never are, and when every session is busy the new one is refused with
// 503 and a JSON-RPC error naming the limit.
func TestMaxSessions(t *testing.T) {
	t.Parallel()
	for _, transport := range sessionTransports {
		t.Run(transport, func(t *testing.T) {
			b := newBlocker(t)
			defer b.open() // before the app's stop, which waits for calls in flight
			a := startSecure(t, `
helix:
  management: { enabled: false }
`+fourWorkflows+blockWorkflow(b)+`
mcps:`+sessionServers("capped", "    api_keys: [key-a]\n    max_sessions: 2\n", true), nil)
			base := serverURL(t, a, "capped-"+transport)
			c := newSessionClient(t)
			key := []string{"X-API-Key", "key-a"}
			open := func() *rawSession { t.Helper(); return openAtCap(t, c, base, transport, key...) }
			first, second := open(), open()
			if transport != "sse" {
				// At the cap, a POST that opens no session evicts nobody.
				probe := &rawSession{t: t, c: c, base: base, transport: transport, auth: key}
				if status, body, _ := probe.post(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, ""); status == http.StatusOK && strings.Contains(body, `"result"`) {
					t.Logf("ping without a session answered: %s", body)
				}
				if !first.alive() || !second.alive() {
					t.Fatal("a request without a session id evicted a session")
				}
			}
			busyFirst := inFlight(t, first, b)
			third := open() // evicts second: idle, while first has a call running
			if second.alive() {
				t.Fatal("the idle session survived an eviction at the cap")
			}
			busyThird := inFlight(t, third, b)
			_, status, body := openSession(t, c, base, transport, key...)
			jsonRPCLimitError(t, status, body, "max_sessions")
			b.open()
			released(t, busyFirst)
			released(t, busyThird)
			if !first.alive() || !third.alive() {
				t.Fatal("a session with a call in flight was evicted")
			}
			open() // both idle again: one of them makes room
		})
	}
}

// max_sessions_per_principal: one key cannot take another's sessions away.
func TestMaxSessionsPerPrincipal(t *testing.T) {
	t.Parallel()
	for _, transport := range sessionTransports {
		t.Run(transport, func(t *testing.T) {
			b := newBlocker(t)
			defer b.open() // before the app's stop, which waits for calls in flight
			a := startSecure(t, `
helix:
  management: { enabled: false }
`+fourWorkflows+blockWorkflow(b)+`
mcps:`+sessionServers("capped", "    api_keys: [key-a, key-b]\n    max_sessions_per_principal: 1\n", true), nil)
			base := serverURL(t, a, "capped-"+transport)
			c := newSessionClient(t)
			keyA := []string{"X-API-Key", "key-a"}
			keyB := []string{"X-API-Key", "key-b"}
			open := func(key []string) *rawSession { t.Helper(); return openAtCap(t, c, base, transport, key...) }
			a1, b1 := open(keyA), open(keyB)
			a2 := open(keyA) // evicts a1, not b1 (older, but another principal's)
			if a1.alive() {
				t.Fatal("key-a's first session survived key-a's second at max_sessions_per_principal: 1")
			}
			if !b1.alive() {
				t.Fatal("key-b's session was evicted for key-a")
			}
			busy := inFlight(t, a2, b)
			_, status, body := openSession(t, c, base, transport, keyA...)
			jsonRPCLimitError(t, status, body, "max_sessions_per_principal")
			b.open()
			released(t, busy)
			if !a2.alive() {
				t.Fatal("the session with a call in flight was evicted")
			}
		})
	}
}

// SSE sessions obey session_idle_timeout: with no message posted for that long the
// session is closed and its event stream ends. A call in flight keeps it open.
func TestSSESessionIdleTimeout(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	a := startSecure(t, `
helix:
  management: { enabled: false }
`+fourWorkflows+blockWorkflow(b)+`
mcps:
  - id: idle
    addr: "127.0.0.1:0"
    transport: sse
    expose: [code-assistant, block]
    session_idle_timeout: 500ms
`, nil)
	base := serverURL(t, a, "idle")
	c := newSessionClient(t)

	s, status, body := openSession(t, c, base, "sse")
	if s == nil {
		t.Fatalf("open: %d %s", status, body)
	}
	for {
		ev, ok := s.nextEvent() // fails the test after 60 s without an event
		if !ok {
			break
		}
		t.Logf("event while idle: %+v", ev)
	}
	if s.alive() {
		t.Fatal("the idle SSE session still answers after its stream ended")
	}

	busy, status, body := openSession(t, c, base, "sse")
	if busy == nil {
		t.Fatalf("open: %d %s", status, body)
	}
	answer := inFlight(t, busy, b)
	time.Sleep(2 * time.Second) // four idle timeouts with the call running
	b.open()
	released(t, answer)
	if !busy.alive() {
		t.Fatal("an SSE session with a call in flight was closed as idle")
	}
}
