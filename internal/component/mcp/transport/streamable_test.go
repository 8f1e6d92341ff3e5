package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawServer serves srv through Helix's transport on a loopback test server.
func rawServer(t *testing.T, srv *sdk.Server, o Options) string {
	t.Helper()
	ts := httptest.NewServer(NewStreamableHandler(srv, &o))
	t.Cleanup(ts.Close)
	return ts.URL
}

func echoServer(t testing.TB) *sdk.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "raw", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}}})
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if req.Params.GetProgressToken() != nil {
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2, Message: "half"}); err != nil {
					return nil, err
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	return srv
}

func TestStreamableSessionLifecycle(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{})
	if r := send(t, http.MethodPost, url, nil, callEcho); r.status != http.StatusBadRequest || !strings.Contains(r.body, "Mcp-Session-Id") {
		t.Fatalf("call without session: %d %s", r.status, r.body)
	}
	if r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": "nope"}, callEcho); r.status != http.StatusNotFound {
		t.Fatalf("unknown session: %d %s", r.status, r.body)
	}
	sid := initSession(t, url)
	h := map[string]string{"Mcp-Session-Id": sid}
	r := send(t, http.MethodPost, url, h, callEcho)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" ||
		r.body != `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"a\":1}"}]}}` {
		t.Fatalf("call: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	// A client that accepts only event streams gets one.
	r = send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream"}, callEcho)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" || !strings.Contains(r.body, `data: {"jsonrpc":"2.0","id":7,"result"`) {
		t.Fatalf("SSE-only call: %d %s %q", r.status, r.header.Get("Content-Type"), r.body)
	}
	// String ids come back as strings; unknown methods are JSON-RPC errors.
	r = send(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","id":"x","method":"ping"}`)
	if r.body != `{"jsonrpc":"2.0","id":"x","result":{}}` {
		t.Fatalf("ping: %s", r.body)
	}
	if r := send(t, http.MethodDelete, url, h, ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := send(t, http.MethodPost, url, h, callEcho); r.status != http.StatusNotFound {
		t.Fatalf("call after delete: %d %s", r.status, r.body)
	}
	if r := send(t, http.MethodPut, url, h, ""); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, POST, DELETE" {
		t.Fatalf("PUT: %d %v", r.status, r.header)
	}
}

func TestStreamableRefusesBadRequests(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{MaxRequestBodyBytes: 512})
	sid := initSession(t, url)
	for name, tc := range map[string]struct {
		hdr  map[string]string
		body string
		want int
	}{
		"content type":     {map[string]string{"Content-Type": "text/plain"}, callEcho, http.StatusUnsupportedMediaType},
		"accept":           {map[string]string{"Accept": "text/html"}, callEcho, http.StatusNotAcceptable},
		"protocol version": {map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, callEcho, http.StatusBadRequest},
		"not JSON":         {nil, `{"jsonrpc":`, http.StatusBadRequest},
		"not JSON-RPC 2.0": {nil, `{"jsonrpc":"1.0","id":1,"method":"ping"}`, http.StatusBadRequest},
		"bad id":           {nil, `{"jsonrpc":"2.0","id":{},"method":"ping"}`, http.StatusBadRequest},
		"empty":            {nil, ` `, http.StatusBadRequest},
		"too large":        {nil, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 600) + `"}}`, http.StatusRequestEntityTooLarge},
		"batch in 2025-06-18": {map[string]string{"Mcp-Protocol-Version": "2025-06-18"},
			`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, http.StatusBadRequest},
	} {
		hdr := map[string]string{"Mcp-Session-Id": sid}
		for k, v := range tc.hdr {
			hdr[k] = v
		}
		if r := send(t, http.MethodPost, url, hdr, tc.body); r.status != tc.want {
			t.Errorf("%s: %d, want %d (%s)", name, r.status, tc.want, r.body)
		}
	}
	// Batches of a 2025-03-26 session are answered as an array (the session's
	// version decides: this one's header cannot make its 2025-06-18 session take one).
	oldSid := initSessionWith(t, url, initBody("2025-03-26", "{}"))
	r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": oldSid, "Mcp-Protocol-Version": "2025-03-26"},
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"z","progress":1}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	var batch []map[string]any
	if err := json.Unmarshal([]byte(r.body), &batch); err != nil || len(batch) != 2 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
}

func TestStreamableDNSRebinding(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{})
	for _, tc := range []struct {
		hdr  map[string]string
		want int
	}{
		{map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"}, http.StatusForbidden},
		{map[string]string{"Origin": "http://evil.example.com"}, http.StatusForbidden},
		{map[string]string{"Origin": "http://localhost:1234"}, http.StatusOK},
		{nil, http.StatusOK},
	} {
		req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(initializeBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range tc.hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%v: %d, want %d", tc.hdr, resp.StatusCode, tc.want)
		}
	}
	// Switched off (a security layer in front checks instead), a foreign Host passes.
	off := rawServer(t, echoServer(t), Options{DisableLocalhostProtection: true})
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, off, strings.NewReader(initializeBody))
	req.Host = "public.example.com"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("protection off: %d", resp.StatusCode)
	}
}

// TestStreamableProgressStreamsTheAnswer: a call that sets a progress token gets its
// progress notifications on its own POST, which therefore turns into an event stream.
func TestStreamableProgressStreamsTheAnswer(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{})
	sid := initSession(t, url)
	r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid},
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":"p1"}}}`)
	if r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q: %s", r.header.Get("Content-Type"), r.body)
	}
	progress := strings.Index(r.body, `"method":"notifications/progress"`)
	result := strings.Index(r.body, `"id":9,"result"`)
	if progress < 0 || result < progress || !strings.Contains(r.body, `"progressToken":"p1"`) {
		t.Fatalf("want progress then result on the POST stream:\n%s", r.body)
	}
}

// TestStreamableStandaloneStream: server-initiated messages (here a tool list
// change) reach the session's GET stream; a second GET stream is refused.
// openStandalone opens the session's standalone GET stream; it is closed when the
// test ends.
func openStandalone(t *testing.T, url, sid string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(testCtx(t))
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func TestStreamableStandaloneStream(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	url := rawServer(t, srv, Options{})
	sid := initSession(t, url)
	resp := openStandalone(t, url, sid)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %v", resp.StatusCode, resp.Header)
	}
	if r := send(t, http.MethodGet, url, map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream"}, ""); r.status != http.StatusConflict {
		t.Fatalf("second GET: %d", r.status)
	}
	srv.AddTool(&sdk.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "notifications/tools/list_changed") {
			return
		}
	}
	t.Fatalf("no list_changed on the GET stream: %v", lines.Err())
}

func TestStreamableIdleEviction(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{SessionIdleTimeout: 100 * time.Millisecond})
	sid := initSession(t, url)
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		if r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid}, callEcho); r.status == http.StatusNotFound {
			return
		}
		time.Sleep(300 * time.Millisecond) // longer than the timeout: the session is idle in between
	}
	t.Fatal("the idle session was never closed")
}

func TestStreamableStatelessWithoutInitialize(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{Stateless: true})
	r := send(t, http.MethodPost, url, map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, callEcho)
	if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") != "" || !strings.Contains(r.body, `"text":"{\"a\":1}"`) {
		t.Fatalf("stateless call: %d %q %s", r.status, r.header.Get("Mcp-Session-Id"), r.body)
	}
	if r := send(t, http.MethodPost, url, nil, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("stateless notification: %d", r.status)
	}
	if r := send(t, http.MethodGet, url, nil, ""); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Fatalf("stateless GET: %d", r.status)
	}
	// 2026-07-28: headers must agree with the body.
	body := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	r = send(t, http.MethodPost, url, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "other"}, body)
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, `"code":-32020`) {
		t.Fatalf("Mcp-Name mismatch: %d %s", r.status, r.body)
	}
}

// SEP-2575's HTTP statuses for a stateless server's 2026-07-28 errors: 404 for a
// method it does not implement (initialize and ping were removed), 400 for a
// request without the _meta fields it requires; and an unsupported version is
// refused with the request's id.
func TestStatelessErrorStatuses(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{Stateless: true})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name, method, body string
		want               int
	}{
		{"removed method", "ping", `{"jsonrpc":"2.0","id":7,"method":"ping","params":{` + meta + `}}`, http.StatusNotFound},
		{"unknown method", "no/such", `{"jsonrpc":"2.0","id":7,"method":"no/such","params":{` + meta + `}}`, http.StatusNotFound},
		{"no _meta", "tools/list", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, http.StatusBadRequest},
		{"served", "tools/list", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + meta + `}}`, http.StatusOK},
	} {
		hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": tc.method}
		r := send(t, http.MethodPost, url, hdr, tc.body)
		if r.status != tc.want || !strings.Contains(r.body, `"id":7`) {
			t.Errorf("%s: %d %s, want %d with the request's id", tc.name, r.status, r.body, tc.want)
		}
	}
	// Earlier protocols keep JSON-RPC errors on 200.
	r := send(t, http.MethodPost, url, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, `{"jsonrpc":"2.0","id":8,"method":"no/such"}`)
	if r.status != http.StatusOK {
		t.Errorf("2025-11-25 unknown method: %d %s, want 200", r.status, r.body)
	}
	r = send(t, http.MethodPost, url, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, `{"jsonrpc":"2.0","id":"abc","method":"tools/list"}`)
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, `"id":"abc"`) {
		t.Errorf("unsupported version: %d %s, want 400 with the request's id", r.status, r.body)
	}
}
