package fastrelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/gateway/h1"
	"github.com/arvenza/helix/internal/testtools"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// goSDKUpstream serves a go-sdk server with the tools echo (its text back,
// with HTML-awkward characters and a structured copy), fail (a tool error) and
// wait (until the call is cancelled), as a typical third-party server.
func goSDKUpstream(t testing.TB, jsonAnswers bool) (url string, waiting, cancelled <-chan struct{}) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, map[string]any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text + " <&> \u2028"}}}, map[string]any{"text": in.Text, "n": 1.5}, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, errors.New("it failed")
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "roots"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		//lint:ignore SA1019 MCP roots are what the upstream asks for
		roots, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var uris []string
		for _, r := range roots.Roots {
			uris = append(uris, r.URI)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(uris, " ")}}}, nil, nil
	})
	gone, started := make(chan struct{}), make(chan struct{})
	sdk.AddTool(srv, &sdk.Tool{Name: "wait"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		close(started)
		<-ctx.Done()
		close(gone)
		return nil, nil, ctx.Err()
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{JSONResponse: jsonAnswers}))
	t.Cleanup(ts.Close)
	return ts.URL, started, gone
}

// connect opens the gateway's go-sdk client session to url, whose id and
// version the relay uses.
func connect(t testing.TB, url string) (*sdk.ClientSession, *Upstream) {
	c := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "1"}, nil)
	cs, err := c.Connect(testCtx(t), &sdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, &Upstream{URL: url, SessionID: cs.ID(), ProtocolVersion: cs.InitializeResult().ProtocolVersion}
}

// TestRelayAnswersAsTheSDKClient: the result the relay reads is byte for byte
// what the go-sdk client session decodes and the go-sdk encodes again, for
// upstreams answering with event streams and with JSON; a tool error and a
// JSON-RPC error come back as the upstream sent them.
func TestRelayAnswersAsTheSDKClient(t *testing.T) {
	t.Parallel()
	for _, jsonAnswers := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonAnswers), func(t *testing.T) {
			t.Parallel()
			url, _, _ := goSDKUpstream(t, jsonAnswers)
			cs, up := connect(t, url)
			relay := New(Options{})
			for _, c := range []struct{ tool, args string }{
				{"echo", `{"text":"hi \"there\""}`},
				{"echo", ` { "text" : "spaced" } `},
				{"fail", `{}`},
				{"echo", ``},
			} {
				var args any
				if c.args != "" {
					args = json.RawMessage(c.args)
				}
				res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: c.tool, Arguments: args})
				if err != nil {
					t.Fatal(err)
				}
				want, err := res.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				got, err := relay.CallTool(testCtx(t), up, c.tool, json.RawMessage(c.args))
				if err != nil || got.Error != nil {
					t.Fatalf("%s %s: %v %v", c.tool, c.args, err, got.Error)
				}
				if string(got.Result) != string(want) {
					t.Errorf("%s %s:\nrelay %s\n  sdk %s", c.tool, c.args, got.Result, want)
				}
			}
			got, err := relay.CallTool(testCtx(t), up, "echo", json.RawMessage(`{"text":1}`))
			if err != nil || got.Error != nil && got.Result != nil {
				t.Fatalf("invalid arguments: %v %+v", err, got)
			}
			if got.Error == nil && !strings.Contains(string(got.Result), `"isError":true`) {
				t.Errorf("invalid arguments: %s, want an error", got.Result)
			}
			got, err = relay.CallTool(testCtx(t), up, "nope", nil)
			if err != nil || got.Error == nil || !strings.Contains(got.Error.Message, "nope") {
				t.Errorf("unknown tool: %v %+v", err, got)
			}
		})
	}
}

// TestRelayCancelsTheUpstreamCall: a call whose context ends is withdrawn on
// the upstream (notifications/cancelled), and the relay returns at once.
func TestRelayCancelsTheUpstreamCall(t *testing.T) {
	t.Parallel()
	url, started, gone := goSDKUpstream(t, false)
	_, up := connect(t, url)
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := New(Options{}).CallTool(ctx, up, "wait", json.RawMessage(`{}`))
		errc <- err
	}()
	<-started // the call runs on the upstream
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	select {
	case <-gone:
	case <-testCtx(t).Done():
		t.Fatal("the upstream's call was never cancelled")
	}
}

// scriptedUpstream answers a call with the given event stream, after checking
// the request, and records the messages posted to it afterwards.
type scriptedUpstream struct {
	mu     sync.Mutex
	posted []string
	header http.Header
	stream func(id string) string
	status int
	ctype  string
}

func (u *scriptedUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage
		Method string
	}
	_ = json.Unmarshal(body, &m)
	u.mu.Lock()
	if m.Method != "tools/call" {
		u.posted = append(u.posted, string(body))
		u.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	u.header = r.Header.Clone()
	u.mu.Unlock()
	if u.status != 0 {
		http.Error(w, "no such session", u.status)
		return
	}
	ct := u.ctype
	if ct == "" {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	_, _ = io.WriteString(w, u.stream(string(m.ID)))
}

func (u *scriptedUpstream) messages() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.posted...)
}

func serve(t *testing.T, h http.Handler) *Upstream {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &Upstream{URL: ts.URL, SessionID: "s-1", ProtocolVersion: "2025-06-18",
		Header: http.Header{"Authorization": {"Bearer upstream-secret"}}}
}

// TestRelayHandlesTheStream: notifications before the answer go to Notify, a
// request to the client is answered through Ask (or refused without it) on
// the upstream session, other events and another call's response are passed
// over, and the request carries the session, version and credential headers.
func TestRelayHandlesTheStream(t *testing.T) {
	t.Parallel()
	u := &scriptedUpstream{stream: func(id string) string {
		return ": comment\n\nevent: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"roots/list\"}\r\n\r\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\n" +
			"data: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n"
	}}
	up := serve(t, u)
	var notes []string
	relay := New(Options{
		Notify: func(_ context.Context, method string, params json.RawMessage) {
			notes = append(notes, method+" "+string(params))
		},
		Ask: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"roots":[]}`), nil
		},
	})
	got, err := relay.CallTool(testCtx(t), up, "t", json.RawMessage(`{"a":1}`))
	if err != nil || string(got.Result) != `{"content":[{"type":"text","text":"done"}]}` {
		t.Fatalf("call: %v %s", err, got.Result)
	}
	if len(notes) != 1 || notes[0] != `notifications/message {"level":"info","data":"x"}` {
		t.Errorf("notifications: %q", notes)
	}
	if m := u.messages(); len(m) != 1 || m[0] != `{"jsonrpc":"2.0","id":5,"result":{"roots":[]}}` {
		t.Errorf("answers posted: %q", m)
	}
	h := u.header
	if h.Get("Mcp-Session-Id") != "s-1" || h.Get("Mcp-Protocol-Version") != "2025-06-18" || h.Get("Authorization") != "Bearer upstream-secret" ||
		!strings.Contains(h.Get("Accept"), "text/event-stream") {
		t.Errorf("request headers: %v", h)
	}

	// Without Ask, the request is refused so that the upstream does not wait.
	u2 := &scriptedUpstream{stream: u.stream}
	if _, err := New(Options{}).CallTool(testCtx(t), serve(t, u2), "t", nil); err != nil {
		t.Fatal(err)
	}
	if m := u2.messages(); len(m) != 1 || !strings.HasPrefix(m[0], `{"jsonrpc":"2.0","id":5,"error":{"code":-32601,`) {
		t.Errorf("refusal posted: %q", m)
	}
}

// TestRelayRefusesBadAnswers: broken, oversized and misaddressed answers are
// errors that say what went wrong and carry no credential; a session the
// upstream does not know and an upstream that cannot be reached are ErrNotRun.
func TestRelayRefusesBadAnswers(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 2000)
	for _, c := range []struct {
		name   string
		u      *scriptedUpstream
		want   string
		notRun bool
	}{
		{"not JSON", &scriptedUpstream{ctype: "application/json", stream: func(string) string { return "{nope" }}, "not JSON-RPC", false},
		{"other id", &scriptedUpstream{ctype: "application/json", stream: func(string) string { return `{"jsonrpc":"2.0","id":1,"result":{}}` }}, "another message", false},
		{"result not an object", &scriptedUpstream{ctype: "application/json", stream: func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":[1]}` }}, "not an object", false},
		{"too big JSON", &scriptedUpstream{ctype: "application/json", stream: func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{"x":"` + big + `"}}` }}, "exceeds 1024 bytes", false},
		{"too big event", &scriptedUpstream{stream: func(id string) string { return "data: " + big + "\n\n" }}, "exceeds 1024 bytes", false},
		{"too many data lines", &scriptedUpstream{stream: func(id string) string { return strings.Repeat("data: "+big[:100]+"\n", 20) }}, "exceeds 1024 bytes", false},
		{"stream ends", &scriptedUpstream{stream: func(string) string { return "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n" }}, "ended before", false},
		{"event not JSON", &scriptedUpstream{stream: func(string) string { return "data: [[[\n\n" }}, "not JSON-RPC", false},
		{"truncated JSON", &scriptedUpstream{ctype: "application/json", stream: func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[` }}, "not JSON-RPC", false},
		{"truncated event", &scriptedUpstream{stream: func(id string) string { return `data: {"jsonrpc":"2.0","id":` + id + `,"result":{` }}, "ended before", false},
		{"batch answer", &scriptedUpstream{ctype: "application/json", stream: func(id string) string { return `[{"jsonrpc":"2.0","id":` + id + `,"result":{}}]` }}, "not JSON-RPC", false},
		{"error of another type", &scriptedUpstream{stream: func(id string) string { return "data: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"error\":\"no\"}\n\n" }}, "not JSON-RPC", false},
		{"unknown session", &scriptedUpstream{status: http.StatusNotFound}, "no longer knows the session", true},
		{"bad request", &scriptedUpstream{status: http.StatusBadRequest}, "HTTP 400", true},
		{"server error", &scriptedUpstream{status: http.StatusBadGateway}, "HTTP 502", false},
	} {
		// The same refusal whether the call goes through Helix's own HTTP/1.1
		// loop (h1) or net/http's transport.
		for _, loop := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/h1=%v", c.name, loop), func(t *testing.T) {
				tr := &http.Transport{}
				defer tr.CloseIdleConnections()
				var l *h1.Loop
				if loop {
					l = h1.Register(tr)
					defer l.Close()
				}
				_, err := New(Options{MaxMessageBytes: 1024, Client: &http.Client{Transport: tr}}).CallTool(testCtx(t), serve(t, c.u), "t", nil)
				if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrNotRun) != c.notRun || strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %v; want one saying %q (not run: %v)", err, c.want, c.notRun)
				}
				if loop && l.Sent() == 0 {
					t.Fatal("the call did not go through the loop")
				}
			})
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = New(Options{}).CallTool(testCtx(t), &Upstream{URL: "http://" + addr + "/mcp?key=secret"}, "t", nil)
	if !errors.Is(err, ErrNotRun) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("unreachable upstream: %v", err)
	}
}

// TestRelayKeepsTheConnection: calls answered with event streams reuse one
// keep-alive connection: the relay reads each stream to its end.
func TestRelayKeepsTheConnection(t *testing.T) {
	t.Parallel()
	u := &scriptedUpstream{stream: func(id string) string {
		return "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"content\":[]}}\n\n"
	}}
	// The upstream ends each stream a moment after the response, as a go-sdk
	// server does once its handler returns (the sleep is that moment).
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.ServeHTTP(w, r)
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
	}))
	var conns atomic.Int32
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	for _, c := range []struct {
		name string
		own  bool // the relay's requests on Helix's HTTP/1.1 loop
	}{{"h1", true}, {"net/http", false}} {
		conns.Store(0)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		var loop *h1.Loop
		if c.own {
			loop = h1.Register(tr)
		}
		relay := New(Options{Client: &http.Client{Transport: tr}})
		for range 5 {
			if _, err := relay.CallTool(testCtx(t), &Upstream{URL: ts.URL}, "t", nil); err != nil {
				t.Fatal(err)
			}
			if loop != nil {
				// The loop's stream is read to its end after the call returned:
				// its connection comes back then.
				testtools.Eventually(t, "the connection back in the loop", func() bool { return loop.Idle() == 1 })
			}
		}
		if n := conns.Load(); n != 1 {
			t.Fatalf("%s: %d connections for 5 calls one after the other, want 1", c.name, n)
		}
		tr.CloseIdleConnections()
		if loop != nil {
			loop.Close()
		}
	}
}

// TestRelayAnswersBeforeTheStreamEnds: with Helix's HTTP/1.1 loop the call
// returns once the upstream's response is read, while the upstream still
// holds its stream open; the stream is read to its end afterwards, and its
// connection serves the next call.
func TestRelayAnswersBeforeTheStreamEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var cut atomic.Bool
	var conns atomic.Int32
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ ID json.RawMessage }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &m)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", m.ID)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			cut.Store(true)
		}
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	loop := h1.Register(tr)
	t.Cleanup(loop.Close)
	relay := New(Options{Client: &http.Client{Transport: tr}})
	relay.endWait = time.Hour // only the stream's end may end the read
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := relay.CallTool(ctx, &Upstream{URL: ts.URL}, "t", nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a bound for the broken case only
		t.Fatal("the call waits for the end of the upstream's stream")
	}
	// The call's context ending now withdraws nothing and cuts nothing.
	cancel()
	close(release)
	testtools.Eventually(t, "the connection back in the loop", func() bool { return loop.Idle() == 1 })
	if cut.Load() {
		t.Fatal("the upstream's stream was cut")
	}
	if _, err := relay.CallTool(testCtx(t), &Upstream{URL: ts.URL}, "t", nil); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestRelayCancelsOnlyRunningCalls: a context that ends after the call's
// answer was read withdraws nothing on the upstream.
func TestRelayCancelsOnlyRunningCalls(t *testing.T) {
	t.Parallel()
	u := &scriptedUpstream{stream: func(id string) string {
		return "data: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"content\":[]}}\n\n"
	}}
	up := serve(t, u)
	relay := New(Options{})
	for range 50 {
		ctx, cancel := context.WithCancel(testCtx(t))
		_, err := relay.CallTool(ctx, up, "t", nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	// An observation window: a withdrawal would be posted within it.
	time.Sleep(100 * time.Millisecond)
	if m := u.messages(); len(m) != 0 {
		t.Fatalf("%d messages posted after completed calls, first %s", len(m), m[0])
	}
}

// TestRelayForwardsMeta: the call's _meta (the caller's trace context) goes
// upstream with it.
func TestRelayForwardsMeta(t *testing.T) {
	t.Parallel()
	var body []byte
	up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		var m message
		_ = json.Unmarshal(body, &m)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[]}}`)
	}))
	up.Meta = json.RawMessage(`{"traceparent":"00-abc-def-01"}`)
	if _, err := New(Options{}).CallTool(testCtx(t), up, "t", json.RawMessage(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Params struct {
			Name      string          `json:"name"`
			Meta      json.RawMessage `json:"_meta"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &sent); err != nil || sent.Params.Name != "t" || string(sent.Params.Meta) != `{"traceparent":"00-abc-def-01"}` || string(sent.Params.Arguments) != `{"a":1}` {
		t.Fatalf("sent %s (%v)", body, err)
	}
}

// TestRelayFollowsRedirects: an upstream that redirects the call (as a server
// moved to another path does) is followed as the HTTP client follows it, with
// the call's body and headers; the call runs once.
func TestRelayFollowsRedirects(t *testing.T) {
	t.Parallel()
	u := &scriptedUpstream{stream: func(id string) string {
		return "data: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"content\":[]}}\n\n"
	}}
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		u.ServeHTTP(w, r)
	})
	up := serve(t, mux)
	up.URL += "/old"
	got, err := New(Options{}).CallTool(testCtx(t), up, "t", json.RawMessage(`{"a":1}`))
	if err != nil || string(got.Result) != `{"content":[]}` {
		t.Fatalf("call: %v %s", err, got.Result)
	}
	if n := calls.Load(); n != 1 || u.header.Get("Mcp-Session-Id") != "s-1" || u.header.Get("Authorization") != "Bearer upstream-secret" {
		t.Fatalf("%d calls at the new address, headers %v", n, u.header)
	}
}

// TestRelayNotificationsKeepTheirParams: the params handed to Notify stay as
// the upstream sent them after the relay reads the next messages of the
// stream (the relay reuses its buffer for each message).
func TestRelayNotificationsKeepTheirParams(t *testing.T) {
	t.Parallel()
	u := &scriptedUpstream{stream: func(id string) string {
		return "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"first\"}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"2nd!!\"}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"content\":[]}}\n\n"
	}}
	var kept []json.RawMessage
	relay := New(Options{Notify: func(_ context.Context, _ string, params json.RawMessage) { kept = append(kept, params) }})
	if _, err := relay.CallTool(testCtx(t), serve(t, u), "t", nil); err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || string(kept[0]) != `{"data":"first"}` || string(kept[1]) != `{"data":"2nd!!"}` {
		t.Fatalf("params kept: %q", kept)
	}
}
