package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Both protocol eras on one endpoint (versions.go, streamable.go post): a
// 2026-07-28 request is served without a session on every server, initialize
// opens a session on a stateful one, and versions are negotiated alike on every
// transport.

const newEraMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// newEraHeaders are the headers SEP-2575 and SEP-2243 ask of a 2026-07-28 POST.
func newEraHeaders(method, name string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

const discoverNewEra = `{"jsonrpc":"2.0","id":11,"method":"server/discover","params":{` + newEraMeta + `}}`
const callEchoNewEra = `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"b":2},` + newEraMeta + `}}`

// answer is one JSON-RPC answer as a client reads it.
type answer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// parseAnswer reads the answer of a POST: an application/json body, or the
// first "data:" event carrying a result or an error.
func parseAnswer(t *testing.T, body string) answer {
	t.Helper()
	var a answer
	if json.Unmarshal([]byte(body), &a) == nil {
		return a
	}
	for line := range strings.SplitSeq(body, "\n") {
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
			var a answer
			if json.Unmarshal([]byte(strings.TrimSpace(data)), &a) == nil && (a.Result != nil || a.Error != nil) {
				return a
			}
		}
	}
	t.Fatalf("no JSON-RPC answer in %q", body)
	return a
}

func TestStatefulServerServesBothEras(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{})

	// A 2026-07-28 POST without Mcp-Session-Id is served, and opens no session.
	r := send(t, http.MethodPost, url, newEraHeaders("server/discover", ""), discoverNewEra)
	if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("server/discover: %d %q %s", r.status, r.header.Get("Mcp-Session-Id"), r.body)
	}
	var discover struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(parseAnswer(t, r.body).Result, &discover); err != nil ||
		!slices.Equal(slices.Sorted(slices.Values(discover.SupportedVersions)), knownProtocolVersions) {
		t.Fatalf("server/discover lists %v, want every version the endpoint serves %v (%s)", discover.SupportedVersions, knownProtocolVersions, r.body)
	}
	r = send(t, http.MethodPost, url, newEraHeaders("tools/call", "echo"), callEchoNewEra)
	if a := parseAnswer(t, r.body); r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") != "" || a.Error != nil ||
		!strings.Contains(string(a.Result), `{\"b\":2}`) || !strings.Contains(string(a.Result), `"resultType"`) {
		t.Fatalf("2026-07-28 tools/call: %d %q %s", r.status, r.header.Get("Mcp-Session-Id"), r.body)
	}

	// initialize still opens a session, whose results have no 2026-07-28 fields.
	sid := initSession(t, url)
	r = send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid}, callEcho)
	if r.status != http.StatusOK || strings.Contains(r.body, "resultType") || !strings.Contains(r.body, `{\"a\":1}`) {
		t.Fatalf("call in the session: %d %s", r.status, r.body)
	}

	// A 2026-07-28 request that names a session is refused with its id: that
	// protocol has no sessions, and the session speaks another version.
	hdr := newEraHeaders("tools/call", "echo")
	hdr["Mcp-Session-Id"] = sid
	r = send(t, http.MethodPost, url, hdr, callEchoNewEra)
	if a := parseAnswer(t, r.body); r.status != http.StatusBadRequest || a.Error == nil || a.Error.Code != -32600 ||
		string(a.ID) != "12" || !strings.Contains(a.Error.Message, "Mcp-Session-Id") {
		t.Fatalf("2026-07-28 request with a session id: %d %s", r.status, r.body)
	}
	// The session is still there.
	if r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid}, callEcho); r.status != http.StatusOK {
		t.Fatalf("session after the refusal: %d %s", r.status, r.body)
	}
	// A legacy request without a session is still refused (only initialize and
	// 2026-07-28 requests come without one).
	if r := send(t, http.MethodPost, url, nil, callEcho); r.status != http.StatusBadRequest || !strings.Contains(r.body, "Mcp-Session-Id") {
		t.Fatalf("legacy call without a session: %d %s", r.status, r.body)
	}
}

// TestStatelessServerNeverOpensASession: stateless: true serves both eras too,
// and initialize opens no session.
func TestStatelessServerNeverOpensASession(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{Stateless: true})
	r := send(t, http.MethodPost, url, nil, initializeBody)
	if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") != "" || !strings.Contains(r.body, `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %d %q %s", r.status, r.header.Get("Mcp-Session-Id"), r.body)
	}
	r = send(t, http.MethodPost, url, newEraHeaders("tools/call", "echo"), callEchoNewEra)
	if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") != "" || !strings.Contains(r.body, `{\"b\":2}`) {
		t.Fatalf("2026-07-28 call: %d %s", r.status, r.body)
	}
}

// peer sends one JSON-RPC request over one transport and returns the HTTP status
// (0 where there is none) and the answer.
type peer interface {
	ask(t *testing.T, hdr map[string]string, body string) (int, answer)
}

type httpPeer struct{ url string }

func (p httpPeer) ask(t *testing.T, hdr map[string]string, body string) (int, answer) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, p.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v} // "" stays, as a present empty header
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, parseAnswer(t, string(b))
}

// stdioPeer runs a fresh stdio connection of srv per request.
type stdioPeer struct{ srv *sdk.Server }

func (p stdioPeer) ask(t *testing.T, _ map[string]string, body string) (int, answer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	ss, err := p.srv.Connect(ctx, NewStdioTransport(nil, inR, inR, outW, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = inW.Close(); _ = ss.Close() }()
	go func() { _, _ = inW.Write([]byte(body + "\n")) }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		var a answer
		if json.Unmarshal(lines.Bytes(), &a) == nil && (a.Result != nil || a.Error != nil) {
			return 0, a
		}
	}
	t.Fatalf("stdio: no answer to %s", body)
	return 0, answer{}
}

// ssePeer opens a fresh HTTP+SSE session per request.
type ssePeer struct{ base string }

func (p ssePeer) ask(t *testing.T, _ map[string]string, body string) (int, answer) {
	t.Helper()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	events.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() string {
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				return data
			}
		}
		t.Fatalf("SSE stream ended: %v", events.Err())
		return ""
	}
	endpoint := p.base + next()
	if r := send(t, http.MethodPost, endpoint, nil, body); r.status != http.StatusAccepted {
		t.Fatalf("SSE POST: %d %s", r.status, r.body)
	}
	var a answer
	if err := json.Unmarshal([]byte(next()), &a); err != nil {
		t.Fatal(err)
	}
	return 0, a
}

// everyTransport serves echoServer on each transport Helix has.
func everyTransport(t *testing.T) map[string]peer {
	t.Helper()
	sdkFront := func(stateless bool) string {
		srv := echoServer(t)
		get := func(*http.Request) *sdk.Server { return srv }
		own := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: stateless})
		sessionless := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: true})
		ts := httptest.NewServer(NewSDKProtocolFront(own, sessionless, &Options{Stateless: stateless}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	sseSrv := echoServer(t)
	o := Options{}
	sse := httptest.NewServer(NewSSEHandler(func() *sdk.Server { return sseSrv }, NewSessionTable(&o), &o))
	t.Cleanup(sse.Close)
	return map[string]peer{
		"helix":           httpPeer{rawServer(t, echoServer(t), Options{})},
		"helix stateless": httpPeer{rawServer(t, echoServer(t), Options{Stateless: true})},
		"sdk":             httpPeer{sdkFront(false)},
		"sdk stateless":   httpPeer{sdkFront(true)},
		"sse":             ssePeer{sse.URL},
		"stdio":           stdioPeer{echoServer(t)},
	}
}

func initializeWith(version string) string {
	return `{"jsonrpc":"2.0","id":21,"method":"initialize","params":{"protocolVersion":` + version +
		`,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
}

// TestBadProtocolVersionsOnEveryTransport: an unsupported or malformed version,
// wherever a request names it, gets UnsupportedProtocolVersionError (-32022) with
// the request's id, the versions the server speaks and the requested value; on
// HTTP with 400.
func TestBadProtocolVersionsOnEveryTransport(t *testing.T) {
	t.Parallel()
	type badCase struct {
		name      string
		header    string // Mcp-Protocol-Version; "-" for none
		body      string
		requested string
		httpOnly  bool
	}
	metaWith := func(v string) string {
		return `{"jsonrpc":"2.0","id":21,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":` + v +
			`,"io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	const list = `{"jsonrpc":"2.0","id":21,"method":"tools/list"}`
	var cases []badCase
	for _, v := range []string{"42", "null", "", "v999.0.0", "2026-13-45"} {
		cases = append(cases, badCase{"header " + v, v, list, v, true})
	}
	for _, v := range []struct{ json, requested string }{
		{`42`, "42"}, {`"42"`, "42"}, {`null`, "null"}, {`""`, ""}, {`"v999.0.0"`, "v999.0.0"}, {`"2099-01-01"`, "2099-01-01"}, {`{}`, "{}"},
	} {
		cases = append(cases, badCase{"_meta " + v.json, "-", metaWith(v.json), v.requested, false})
	}
	for _, v := range []struct{ json, requested string }{
		{`42`, "42"}, {`"42"`, "42"}, {`null`, "null"}, {`""`, ""}, {`"2025-11-25x"`, "2025-11-25x"},
	} {
		cases = append(cases, badCase{"initialize " + v.json, "-", initializeWith(v.json), v.requested, false})
	}
	cases = append(cases, badCase{"initialize without protocolVersion", "-",
		`{"jsonrpc":"2.0","id":21,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, "", false})

	for name, p := range everyTransport(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, isHTTP := p.(httpPeer)
			for _, tc := range cases {
				if tc.httpOnly && !isHTTP {
					continue
				}
				hdr := map[string]string{}
				if tc.header != "-" {
					hdr["Mcp-Protocol-Version"] = tc.header
				}
				status, a := p.ask(t, hdr, tc.body)
				if isHTTP && status != http.StatusBadRequest {
					t.Errorf("%s: HTTP %d, want 400", tc.name, status)
				}
				if a.Error == nil || a.Error.Code != sdk.CodeUnsupportedProtocolVersion || string(a.ID) != "21" {
					t.Errorf("%s: got %+v %s, want -32022 with id 21", tc.name, a.Error, a.Result)
					continue
				}
				var data sdk.UnsupportedProtocolVersionData
				if err := json.Unmarshal(a.Error.Data, &data); err != nil || data.Requested != tc.requested ||
					!slices.Equal(slices.Sorted(slices.Values(data.Supported)), knownProtocolVersions) {
					t.Errorf("%s: data %s, want every served version and requested %q", tc.name, a.Error.Data, tc.requested)
				}
				if !strings.Contains(a.Error.Message, "2025-11-25, 2026-07-28") {
					t.Errorf("%s: the message names no supported version: %s", tc.name, a.Error.Message)
				}
			}
		})
	}
}

// TestVersionNegotiationOnEveryTransport: the same answers everywhere — a
// supported initialize version is kept, a well-formed unknown one is answered
// with the newest legacy version (the 2025-11-25 lifecycle), and server/discover
// at 2026-07-28 lists every version.
func TestVersionNegotiationOnEveryTransport(t *testing.T) {
	t.Parallel()
	for name, p := range everyTransport(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct{ asked, want string }{
				{"2024-11-05", "2024-11-05"}, {"2025-06-18", "2025-06-18"}, {"2025-11-25", "2025-11-25"},
				{"2099-01-01", "2025-11-25"}, {"2026-07-28", "2025-11-25"},
			} {
				_, a := p.ask(t, nil, initializeWith(`"`+tc.asked+`"`))
				var res struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				if a.Error != nil || json.Unmarshal(a.Result, &res) != nil || res.ProtocolVersion != tc.want {
					t.Errorf("initialize %s: %+v %s, want %s", tc.asked, a.Error, a.Result, tc.want)
				}
			}
			_, a := p.ask(t, newEraHeaders("server/discover", ""), discoverNewEra)
			var discover struct {
				SupportedVersions []string `json:"supportedVersions"`
			}
			if a.Error != nil || json.Unmarshal(a.Result, &discover) != nil ||
				!slices.Equal(slices.Sorted(slices.Values(discover.SupportedVersions)), knownProtocolVersions) {
				t.Errorf("server/discover: %+v %s, want %v", a.Error, a.Result, knownProtocolVersions)
			}
			_, a = p.ask(t, newEraHeaders("tools/call", "echo"), callEchoNewEra)
			if a.Error != nil || !strings.Contains(string(a.Result), `{\"b\":2}`) || !strings.Contains(string(a.Result), `"resultType"`) {
				t.Errorf("2026-07-28 tools/call: %+v %s", a.Error, a.Result)
			}
		})
	}
}
