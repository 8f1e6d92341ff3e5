package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// The tests park sessions by hand (parkNow) on handlers whose own sweep would
// not come for an hour, so that when a session parks is the test's choice;
// TestSweepParksIdleSessions lets the sweep do it.

// noSweep is a park threshold no test waits for.
const noSweep = time.Hour

// parkNow parks the session sid of h as a sweep would (two sweeps: the first
// sees the last request, the second finds the session unused since) and
// reports whether it is parked.
func parkNow(t *testing.T, h *StreamableHandler, sid string) bool {
	t.Helper()
	c := sessionOf(t, h, sid)
	gen := h.park.gens()
	c.tryPark(gen)
	c.tryPark(gen)
	return isParked(c)
}

func isParked(c *streamConn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parked != nil && c.session == nil
}

// idSessions counts the go-sdk sessions of srv with an id (the watcher has
// none).
func idSessions(srv *sdk.Server) int {
	n := 0
	for ss := range srv.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// logServer is echoServer with a tool "log" that sends a debug and a warning
// log message before it answers, and a resource.
func logServer(t testing.TB) *sdk.Server {
	srv := echoServer(t)
	srv.AddTool(&sdk.Tool{Name: "log", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
			for _, l := range []sdk.LoggingLevel{"debug", "warning"} {
				//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
				if err := req.Session.Log(RelatedTo(ctx, req.Extra), &sdk.LoggingMessageParams{Level: l, Data: "at " + string(l)}); err != nil {
					return nil, err
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "logged"}}}, nil
		})
	srv.AddResource(&sdk.Resource{URI: "test://r", Name: "r"}, func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "test://r", Text: "r"}}}, nil
	})
	return srv
}

// A parked session answers every request exactly as the same session did before
// it was parked, and as a session never parked does: tools (both paths), lists,
// ping, its log level, its protocol version.
func TestParkedSessionAnswersAsBefore(t *testing.T) {
	t.Parallel()
	srv := logServer(t)
	h := NewStreamableHandler(srv, &Options{ParkIdleAfter: noSweep})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	parked, awake := initSession(t, ts.URL), initSession(t, ts.URL)
	requests := []string{
		callEcho,
		`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":9,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"test://r"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"log","arguments":{}}}`,
	}
	ask := func(sid, body string) string {
		r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}, body)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
		return r.body
	}
	for _, sid := range []string{parked, awake} {
		ask(sid, `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`)
	}
	for round := range 3 {
		if !parkNow(t, h, parked) {
			t.Fatalf("round %d: the idle session was not parked", round)
		}
		if n := idSessions(srv); n != 1 {
			t.Fatalf("round %d: %d go-sdk sessions with a parked one, want the other's only", round, n)
		}
		for _, body := range requests {
			got, want := ask(parked, body), ask(awake, body)
			if got != want {
				t.Fatalf("round %d: %s\nparked session: %s\nawake session:  %s", round, body, got, want)
			}
			if strings.Contains(body, `"log"`) && !strings.Contains(got, "at debug") {
				t.Fatalf("round %d: the log level set before the park is lost: %s", round, got)
			}
		}
	}
	// A level set after an unpark is the one the next park keeps.
	ask(parked, `{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"warning"}}`)
	if !parkNow(t, h, parked) {
		t.Fatal("not parked after setLevel")
	}
	if got := ask(parked, requests[5]); strings.Contains(got, "at debug") || !strings.Contains(got, "at warning") {
		t.Fatalf("level warning across a park: %s", got)
	}
	// A level the session refused is not kept.
	if r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": parked},
		`{"jsonrpc":"2.0","id":5,"method":"logging/setLevel"}`); r.status != http.StatusOK || !strings.Contains(r.body, `"error"`) {
		t.Fatalf("setLevel without params: %d %s", r.status, r.body)
	}
	if !parkNow(t, h, parked) {
		t.Fatal("not parked after a refused setLevel")
	}
	if got := ask(parked, requests[5]); strings.Contains(got, "at debug") || !strings.Contains(got, "at warning") {
		t.Fatalf("level after a refused setLevel and a park: %s", got)
	}
}

// Sessions in the middle of something, or holding what the go-sdk session
// keeps, are not parked: before the handshake ends, with a GET stream open,
// with a resource subscription, with a request running.
func TestParkOnlyIdleSessions(t *testing.T) {
	t.Parallel()
	srv := logServer(t)
	h := NewStreamableHandler(srv, &Options{ParkIdleAfter: noSweep})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)

	r := send(t, http.MethodPost, ts.URL, nil, initializeBody)
	if noHandshake := r.header.Get(sessionIDHeader); parkNow(t, h, noHandshake) {
		t.Fatal("a session without notifications/initialized was parked")
	}

	withGET := initSession(t, ts.URL)
	resp := openStandalone(t, ts.URL, withGET)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if parkNow(t, h, withGET) {
		t.Fatal("a session with its GET stream open was parked")
	}
	_ = resp.Body.Close()
	testtools.Eventually(t, "the session parks once its GET stream is closed", func() bool { return parkNow(t, h, withGET) })

	subscribed := initSession(t, ts.URL)
	send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": subscribed},
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://r"}}`)
	if parkNow(t, h, subscribed) {
		t.Fatal("a session with a resource subscription was parked")
	}

	busy := initSession(t, ts.URL)
	c := sessionOf(t, h, busy)
	c.begin() // a request running
	if parkNow(t, h, busy) {
		t.Fatal("a session with a request running was parked")
	}
	c.end()
	if !parkNow(t, h, busy) {
		t.Fatal("the session did not park once its request ended")
	}
}

// A list change while a session is parked reaches its next GET stream, as it
// reaches a session that was never parked.
func TestParkedSessionGetsListChanges(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	h := NewStreamableHandler(srv, &Options{ParkIdleAfter: noSweep})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	parked, awake := initSession(t, ts.URL), initSession(t, ts.URL)
	if !parkNow(t, h, parked) {
		t.Fatal("not parked")
	}
	before := h.park.gens()
	srv.AddTool(&sdk.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	testtools.Eventually(t, "the watcher counts the list change", func() bool { return h.park.gens() != before })
	if !isParked(sessionOf(t, h, parked)) {
		t.Fatal("the list change unparked the session")
	}
	for _, sid := range []string{awake, parked} {
		resp := openStandalone(t, ts.URL, sid)
		lines := bufio.NewScanner(resp.Body)
		got := false
		for !got && lines.Scan() {
			got = strings.Contains(lines.Text(), `"method":"notifications/tools/list_changed"`)
		}
		if !got {
			t.Fatalf("session %s: no list_changed on its GET stream: %v", sid, lines.Err())
		}
		_ = resp.Body.Close()
	}
	// Delivered once: parked again and woken by a POST, it has nothing queued.
	testtools.Eventually(t, "parked again", func() bool { return parkNow(t, h, parked) })
	if r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": parked}, callEcho); r.status != http.StatusOK {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	c := sessionOf(t, h, parked)
	c.mu.Lock()
	queued := len(c.standalone)
	c.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d messages queued after a park without list changes", queued)
	}
}

// A resumable stream (protocol 2025-11-25) answered before the park is resumed
// after it with Last-Event-ID, as without a park.
func TestParkedSessionResumesStreams(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	h := NewStreamableHandler(srv, &Options{ParkIdleAfter: noSweep})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	r := send(t, http.MethodPost, ts.URL, nil, strings.Replace(initializeBody, "2025-06-18", "2025-11-25", 1))
	sid := r.header.Get(sessionIDHeader)
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	send(t, http.MethodPost, ts.URL, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	hdr["Accept"] = "text/event-stream"
	r = send(t, http.MethodPost, ts.URL, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"x":1},"_meta":{"progressToken":"p"}}}`)
	ids := regexp.MustCompile(`(?m)^id: (\S+)$`).FindAllStringSubmatch(r.body, -1)
	if r.status != http.StatusOK || len(ids) < 2 {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	resume := func() string {
		return send(t, http.MethodGet, ts.URL, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25",
			"Accept": "text/event-stream", lastEventIDHeader: ids[0][1]}, "").body
	}
	want := resume()
	if !strings.Contains(want, `"id":2,"result"`) {
		t.Fatalf("resume before the park: %s", want)
	}
	if !parkNow(t, h, sid) {
		t.Fatal("not parked")
	}
	if got := resume(); got != want {
		t.Fatalf("resume after the park:\n%s\nbefore:\n%s", got, want)
	}
}

// A parked session ends like any other: DELETE, the idle timeout, eviction at
// max_sessions, and the server's stop (which closes its go-sdk sessions).
func TestParkedSessionsEnd(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	h := NewStreamableHandler(srv, &Options{ParkIdleAfter: noSweep, MaxSessions: 3})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	gone := func(sid string) bool {
		return send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid}, callEcho).status == http.StatusNotFound
	}
	deleted := initSession(t, ts.URL)
	if !parkNow(t, h, deleted) {
		t.Fatal("not parked")
	}
	if r := send(t, http.MethodDelete, ts.URL, map[string]string{"Mcp-Session-Id": deleted}, ""); r.status != http.StatusNoContent || !gone(deleted) {
		t.Fatalf("DELETE of a parked session: %d %s", r.status, r.body)
	}

	evicted := initSession(t, ts.URL)
	if !parkNow(t, h, evicted) {
		t.Fatal("not parked")
	}
	kept := []string{initSession(t, ts.URL), initSession(t, ts.URL)}
	third := initSession(t, ts.URL) // at max_sessions: the idle longest makes room
	if !gone(evicted) {
		t.Fatal("the parked session was not evicted at max_sessions")
	}
	for _, sid := range append(kept, third) {
		if gone(sid) {
			t.Fatalf("session %s gone", sid)
		}
	}

	for _, sid := range kept {
		if !parkNow(t, h, sid) {
			t.Fatal("not parked")
		}
	}
	// The server stops: it closes its go-sdk sessions (the parked ones have none).
	for ss := range srv.Sessions() {
		_ = ss.Close()
	}
	for _, sid := range append(kept, third) {
		if !gone(sid) {
			t.Fatalf("session %s outlived the server's stop", sid)
		}
	}
	if h.table.len() != 0 {
		t.Fatalf("%d sessions left in the table", h.table.len())
	}

	idle := NewStreamableHandler(srv, &Options{ParkIdleAfter: noSweep, SessionIdleTimeout: 50 * time.Millisecond})
	its := httptest.NewServer(idle)
	t.Cleanup(its.Close)
	sid := initSession(t, its.URL)
	if !parkNow(t, idle, sid) {
		t.Fatal("not parked")
	}
	testtools.Eventually(t, "the parked session expires", func() bool {
		idle.mu.RLock()
		defer idle.mu.RUnlock()
		return idle.sessions[sid] == nil
	})
}

// Many requests racing to unpark one session: each is answered, and one go-sdk
// session serves them all.
func TestUnparkRace(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	h := NewStreamableHandler(srv, &Options{ParkIdleAfter: noSweep})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	sid := initSession(t, ts.URL)
	for round := range 5 {
		if !parkNow(t, h, sid) {
			t.Fatalf("round %d: not parked", round)
		}
		var wg sync.WaitGroup
		errs := make(chan string, 32)
		for i := range 32 {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"i":%d}}}`, 100+i, i)
			if i%2 == 1 {
				body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 100+i) // the go-sdk session's path
			}
			wg.Go(func() {
				r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid}, body)
				if r.status != http.StatusOK || !strings.Contains(r.body, fmt.Sprintf(`"id":%d,"result"`, 100+i)) {
					errs <- fmt.Sprintf("%s: %d %s", body, r.status, r.body)
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		if n := idSessions(srv); n != 1 {
			t.Fatalf("round %d: %d go-sdk sessions after the race, want 1", round, n)
		}
	}
	// The same without HTTP, the requests let go at once: over HTTP the first
	// often unparks the session before the others arrive.
	c := sessionOf(t, h, sid)
	for round := range 2000 {
		if !parkNow(t, h, sid) {
			t.Fatalf("round %d: not parked", round)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				<-start
				ok, parked := c.enter()
				if ok && parked && !c.unpark(context.Background()) {
					t.Error("unpark failed")
				}
				if ok {
					c.end()
				}
			})
		}
		close(start)
		wg.Wait()
		if n := idSessions(srv); n != 1 || isParked(c) {
			t.Fatalf("round %d: %d go-sdk sessions after the race (want 1), parked %v", round, n, isParked(c))
		}
	}
	if r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid}, callEcho); r.status != http.StatusOK {
		t.Fatalf("call after the races: %d %s", r.status, r.body)
	}
}

// The handler's own sweep parks a session left idle, and stops with the last
// session.
func TestSweepParksIdleSessions(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	h := NewStreamableHandler(srv, &Options{ParkIdleAfter: 20 * time.Millisecond})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	sid := initSession(t, ts.URL)
	c := sessionOf(t, h, sid)
	testtools.Eventually(t, "the idle session parks", func() bool { return isParked(c) })
	if r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid}, callEcho); r.status != http.StatusOK {
		t.Fatalf("call after the park: %d %s", r.status, r.body)
	}
	send(t, http.MethodDelete, ts.URL, map[string]string{"Mcp-Session-Id": sid}, "")
	testtools.Eventually(t, "the sweep and its watcher stop with the last session", func() bool {
		h.park.mu.Lock()
		defer h.park.mu.Unlock()
		return !h.park.running && srvSessions(srv) == 0
	})
}

func srvSessions(srv *sdk.Server) int {
	n := 0
	for range srv.Sessions() {
		n++
	}
	return n
}

// A session is not parked by a handler told never to park.
func TestParkOff(t *testing.T) {
	t.Parallel()
	h := NewStreamableHandler(echoServer(t), &Options{ParkIdleAfter: -1})
	openIdleSession(t, h)
	if h.parkEnabled() {
		t.Fatal("parking enabled")
	}
	h.park.mu.Lock()
	running := h.park.running
	h.park.mu.Unlock()
	if running {
		t.Fatal("a sweep runs on a handler that never parks")
	}
}

// The console lists a parked session with the protocol and client its
// initialize named, as it lists an awake one.
func TestParkedSessionInSnapshot(t *testing.T) {
	t.Parallel()
	h := NewStreamableHandler(echoServer(t), &Options{ParkIdleAfter: noSweep})
	sid := openIdleSession(t, h)
	for _, park := range []bool{false, true} {
		if park && !parkNow(t, h, sid) {
			t.Fatal("not parked")
		}
		rows, total := h.table.Snapshot(10)
		if total != 1 || rows[0].ID != sid || rows[0].Protocol != "2025-06-18" || rows[0].Client != "raw 1" {
			t.Fatalf("parked %v: snapshot %+v (of %d)", park, rows, total)
		}
	}
}

// BenchmarkParkedCall is the cost of parking a session and of the call that
// wakes it (connecting a go-sdk session with the saved state, then a tools/call
// through the fast path), against the same call on an awake session:
//
//	go test -run '^$' -bench ParkedCall -benchmem ./internal/component/mcp/transport
func BenchmarkParkedCall(b *testing.B) {
	for _, park := range []bool{false, true} {
		name := "awake"
		if park {
			name = "park+unpark"
		}
		b.Run(name, func(b *testing.B) {
			h := NewStreamableHandler(echoServer(b), &Options{ParkIdleAfter: noSweep})
			sid := openIdleSession(b, h)
			for b.Loop() {
				if park {
					parkAll(b, h)
				}
				if rec := postInProcess(h, sid, callEcho); rec.Code != http.StatusOK {
					b.Fatalf("call: %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// A session that only calls tools through the fast path needs no go-sdk session:
// those calls do not keep it awake, and once parked they are served without
// unparking it, with the answers of an awake session; a request the go-sdk
// serves (tools/list) unparks it as before.
func TestFastCallsLeaveASessionParked(t *testing.T) {
	t.Parallel()
	srv := resultServer(t)
	fast := NewFastToolCalls(func(_ context.Context, _ *http.Request, call *ToolCall) (*sdk.CallToolResult, error) {
		var in struct{ I int }
		if err := json.Unmarshal(call.Args, &in); err != nil {
			return nil, err
		}
		return rawResults[in.I], nil
	}, nil)
	h := NewStreamableHandler(srv, &Options{ParkIdleAfter: noSweep, Fast: fast})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	sid, awake := initSession(t, ts.URL), initSession(t, ts.URL)
	call := func(sid string, i int) string {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t","arguments":{"i":%d}}}`, 20+i, i)
		r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}, body)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
		return r.body
	}
	served := fast.served.Load()
	// Fast calls between two sweeps: the session was not used (parkNow's sweeps).
	call(sid, 0)
	c := sessionOf(t, h, sid)
	gen := h.park.gens()
	c.tryPark(gen)
	call(sid, 1)
	c.tryPark(gen)
	if !isParked(c) {
		t.Fatal("a session with only fast calls since the last sweep was not parked")
	}
	for i := range rawResults {
		if got, want := call(sid, i), call(awake, i); got != want {
			t.Fatalf("call %d: parked session %s, awake %s", i, got, want)
		}
		if !isParked(c) {
			t.Fatalf("call %d unparked the session", i)
		}
	}
	if n := fast.served.Load() - served; n != uint64(2+2*len(rawResults)) {
		t.Fatalf("the fast path served %d calls, want %d", n, 2+2*len(rawResults))
	}
	if n := idSessions(srv); n != 1 {
		t.Fatalf("%d go-sdk sessions, want the awake one's only", n)
	}
	r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"}, `{"jsonrpc":"2.0","id":40,"method":"tools/list"}`)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"name":"t"`) || isParked(c) {
		t.Fatalf("tools/list on the parked session: %d %s (parked after: %v)", r.status, r.body, isParked(c))
	}
}

// passTasks is a tasks extension that may run every tool as a task but hands
// every request back (handled false), as a call without a task request is.
type passTasks struct{ asked atomic.Int64 }

func (p *passTasks) TaskTool(string) bool { return true }
func (p *passTasks) Serve(context.Context, *TaskRequest) (any, *jsonrpc.Error, bool) {
	p.asked.Add(1)
	return nil, nil, false
}

// A call of a tool the tasks extension may run goes to it first; when it hands
// the call back, the fast path still serves it (a parked session is woken for
// the extension, which may use the session).
func TestTaskToolCallsReachTheFastPathWhenTasksPass(t *testing.T) {
	t.Parallel()
	fast := NewFastToolCalls(func(_ context.Context, _ *http.Request, call *ToolCall) (*sdk.CallToolResult, error) {
		return rawResults[0], nil
	}, nil)
	tasks := &passTasks{}
	h := NewStreamableHandler(resultServer(t), &Options{ParkIdleAfter: noSweep, Fast: fast, Tasks: tasks})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	sid := initSession(t, ts.URL)
	for round := range 2 {
		if round == 1 && !parkNow(t, h, sid) {
			t.Fatal("not parked")
		}
		before := fast.served.Load()
		r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"},
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{"i":0}}}`)
		if r.status != http.StatusOK || !strings.Contains(r.body, "hello") {
			t.Fatalf("round %d: %d %s", round, r.status, r.body)
		}
		if fast.served.Load() != before+1 {
			t.Fatalf("round %d: the fast path did not serve the call the tasks extension handed back", round)
		}
		if tasks.asked.Load() != int64(round+1) {
			t.Fatalf("round %d: the tasks extension was asked %d times", round, tasks.asked.Load())
		}
	}
}
