package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// What an idle stateful session holds, measured in process: sessions opened on a
// handler of their own (initialize, then notifications/initialized, as every
// client does), nothing else sent, then the Go heap's live objects and the
// goroutine stacks read from runtime/metrics after full collections, against the
// same before the sessions were opened. No network: the figure is the session's
// own state (Helix's transport and the go-sdk's ServerSession), not connections.

// sessionMemory is what n idle sessions hold, per session.
type sessionMemory struct {
	n          int
	heap       float64 // live heap objects, bytes
	stacks     float64 // goroutine stack memory, bytes
	goroutines float64
}

func (m sessionMemory) total() float64 { return m.heap + m.stacks }

// memSample reads the live heap, the stack memory and the goroutines after two
// full collections (the second lets the first's stack shrinking show).
type memSample struct{ heap, stacks, goroutines uint64 }

func readMem() memSample {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(s)
	return memSample{s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()}
}

// postInProcess sends one POST to h without a network and returns the answer.
func postInProcess(h http.Handler, sid, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(sessionIDHeader, sid)
		req.Header.Set(protocolVersionHeader, "2025-06-18")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// openIdleSession opens a session on h the way a client does and leaves it idle.
func openIdleSession(tb testing.TB, h http.Handler) string {
	rec := postInProcess(h, "", initializeBody)
	sid := rec.Header().Get(sessionIDHeader)
	if rec.Code != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: %d %q %s", rec.Code, sid, rec.Body)
	}
	if rec := postInProcess(h, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); rec.Code != http.StatusAccepted {
		tb.Fatalf("initialized: %d %s", rec.Code, rec.Body)
	}
	return sid
}

// measureIdleSessions opens n idle sessions on a fresh server and handler and
// reports what they hold per session, parked (park.go) when park is set;
// profiles, when not "", names a directory for a heap and a goroutine profile
// taken while they are open (named parked-… or awake-…). The sessions are
// closed (DELETE) before it returns.
func measureIdleSessions(tb testing.TB, n int, profiles string, park bool) sessionMemory {
	tb.Helper()
	if profiles != "" {
		// Every allocation sampled: the profile then shows each session's bytes,
		// not a sample of them.
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 1
	}
	// The handler's own sweep never comes during a measurement: the sessions
	// are parked here, all of them, or none.
	o := &Options{ParkIdleAfter: -1}
	if park {
		o.ParkIdleAfter = noSweep
	}
	h := NewStreamableHandler(echoServer(tb), o)
	// One session first: what the server and handler allocate once is not a
	// session's.
	first := openIdleSession(tb, h)
	ids := make([]string, 0, n)
	before := readMem()
	for range n {
		ids = append(ids, openIdleSession(tb, h))
	}
	if park {
		parkAll(tb, h)
	}
	after := readMem()
	if profiles != "" {
		for _, name := range []string{"heap", "goroutine"} {
			prefix := "awake-"
			if park {
				prefix = "parked-"
			}
			f, err := os.Create(filepath.Join(profiles, prefix+name+".pb.gz"))
			if err != nil {
				tb.Fatal(err)
			}
			if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
				tb.Fatal(err)
			}
			if err := f.Close(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if got := h.table.len(); got != n+1 {
		tb.Fatalf("%d sessions open, want %d", got, n+1)
	}
	for _, sid := range append(ids, first) {
		req := httptest.NewRequest(http.MethodDelete, "/mcp", nil)
		req.Header.Set(sessionIDHeader, sid)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			tb.Fatalf("DELETE %s: %d %s", sid, rec.Code, rec.Body)
		}
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	return sessionMemory{n: n, heap: per(after.heap, before.heap), stacks: per(after.stacks, before.stacks),
		goroutines: per(after.goroutines, before.goroutines)}
}

// idleSessionBound is what an idle session may hold in this test: half again
// what it holds today (see BENCHMARKS.md, "Memory at scale"), so that
// noise passes and a session that grows back towards twice its size fails.
// The race detector's binaries grow stacks further, hence their own bound.
func idleSessionBound() float64 {
	if raceEnabled {
		return 1.5 * idleSessionRace
	}
	return 1.5 * idleSessionPlain
}

// parkedSessionBound is idleSessionBound for a parked session, which has no
// goroutine.
func parkedSessionBound() float64 { return 1.5 * parkedSession }

// parkAll parks every session of h, as two sweeps would.
func parkAll(tb testing.TB, h *StreamableHandler) {
	tb.Helper()
	h.mu.RLock()
	all := make([]*streamConn, 0, len(h.sessions))
	for _, c := range h.sessions {
		all = append(all, c)
	}
	h.mu.RUnlock()
	gen := h.park.gens()
	for _, c := range all {
		c.tryPark(gen)
		c.tryPark(gen)
		if !isParked(c) {
			tb.Fatalf("session %s was not parked", c.id)
		}
	}
}

// TestIdleSessionMemory keeps an idle session small: heap and goroutine stacks
// per session, in process. Not parallel: it reads the memory of the whole
// process.
func TestIdleSessionMemory(t *testing.T) {
	m := measureIdleSessions(t, 500, "", false)
	t.Logf("per idle session: %.0f B heap + %.0f B stacks = %.0f B, %.2f goroutines",
		m.heap, m.stacks, m.total(), m.goroutines)
	if bound := idleSessionBound(); m.total() > bound {
		t.Fatalf("an idle session holds %.0f B (heap %.0f, stacks %.0f), more than the bound of %.0f B",
			m.total(), m.heap, m.stacks, bound)
	}
	if m.goroutines > 1.05 {
		t.Fatalf("%.2f goroutines per idle session, want at most the go-sdk session's one", m.goroutines)
	}
}

// TestParkedSessionMemory keeps a parked session smaller still: no goroutine,
// and a fraction of an awake one's bytes. Not parallel, as TestIdleSessionMemory.
func TestParkedSessionMemory(t *testing.T) {
	m := measureIdleSessions(t, 500, "", true)
	t.Logf("per parked session: %.0f B heap + %.0f B stacks = %.0f B, %.2f goroutines",
		m.heap, m.stacks, m.total(), m.goroutines)
	held := m.total()
	if raceEnabled {
		// The race detector's runtime keeps the stacks of the goroutines the
		// parks ended (for goroutines to come): no goroutine holds them.
		held = m.heap
	}
	if bound := parkedSessionBound(); held > bound {
		t.Fatalf("a parked session holds %.0f B (heap %.0f, stacks %.0f), more than the bound of %.0f B",
			m.total(), m.heap, m.stacks, bound)
	}
	if m.goroutines > 0.05 {
		t.Fatalf("%.2f goroutines per parked session, want none", m.goroutines)
	}
}

// BenchmarkIdleSessions opens HELIX_IDLE_SESSIONS (default 10,000) idle
// sessions per iteration, awake and then parked (park.go), and reports what
// each holds; with HELIX_SESSION_PROFILES=dir it also writes heap and
// goroutine profiles taken while they are open (awake-… and parked-…):
//
//	go test -run '^$' -bench IdleSessions -benchtime 1x ./internal/component/mcp/transport
func BenchmarkIdleSessions(b *testing.B) {
	n := 10_000
	if v := os.Getenv("HELIX_IDLE_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("HELIX_IDLE_SESSIONS=%q: want a positive whole number", v)
		}
	}
	var m, p sessionMemory
	for b.Loop() {
		m = measureIdleSessions(b, n, os.Getenv("HELIX_SESSION_PROFILES"), false)
		p = measureIdleSessions(b, n, os.Getenv("HELIX_SESSION_PROFILES"), true)
	}
	b.ReportMetric(m.total(), "B/session")
	b.ReportMetric(m.heap, "heap-B/session")
	b.ReportMetric(m.stacks, "stack-B/session")
	b.ReportMetric(m.goroutines, "goroutines/session")
	b.ReportMetric(p.total(), "parked-B/session")
	b.ReportMetric(p.heap, "parked-heap-B/session")
	b.ReportMetric(p.stacks, "parked-stack-B/session")
	b.ReportMetric(p.goroutines, "parked-goroutines/session")
}

// heldState names the request maps and queues c holds (made, even if empty).
func heldState(c *streamConn) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var held []string
	for _, f := range []struct {
		name string
		made bool
	}{{"pending", c.pending != nil}, {"fast", c.fast != nil}, {"progress", c.progress != nil},
		{"related", c.related != nil}, {"cancelled", c.cancelled != nil}, {"holding", c.holding != nil},
		{"standalone", c.standalone != nil}} {
		if f.made {
			held = append(held, f.name)
		}
	}
	return held
}

// sessionOf is the session sid of h.
func sessionOf(t *testing.T, h *StreamableHandler, sid string) *streamConn {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.sessions[sid]
	if c == nil {
		t.Fatalf("no session %s", sid)
	}
	return c
}

// An idle session holds no state for requests: none after initialize, and none
// once the requests it served (here a tool call with a progress token, which
// uses the SDK path's maps, and a cancellation that comes too late) are answered.
func TestIdleSessionHoldsNoRequestState(t *testing.T) {
	t.Parallel()
	h := NewStreamableHandler(echoServer(t), &Options{})
	sid := openIdleSession(t, h)
	c := sessionOf(t, h, sid)
	if held := heldState(c); len(held) > 0 {
		t.Fatalf("a fresh idle session holds %v", held)
	}
	rec := postInProcess(h, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":"p"}}}`)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"progress":1`) || !strings.Contains(rec.Body.String(), `"id":2,"result"`) {
		t.Fatalf("call with progress: %d %s", rec.Code, rec.Body)
	}
	if rec := postInProcess(h, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`); rec.Code != http.StatusAccepted {
		t.Fatalf("cancellation: %d %s", rec.Code, rec.Body)
	}
	if held := heldState(c); len(held) > 0 {
		t.Fatalf("an idle session holds %v after its requests were answered", held)
	}
}

// What the server sends a session before any GET stream is open waits for it:
// the queue made on first use keeps it, as the one made up front did.
func TestStandaloneMessagesWaitForTheFirstGET(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	h := NewStreamableHandler(srv, &Options{})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	sid := initSession(t, ts.URL)
	c := sessionOf(t, h, sid)
	srv.AddTool(&sdk.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	testtools.Eventually(t, "the list change queued for the standalone stream", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.standalone) > 0
	})
	resp := openStandalone(t, ts.URL, sid)
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "notifications/tools/list_changed") {
			return
		}
	}
	t.Fatalf("the list change sent before the GET did not reach it: %v", lines.Err())
}

// What an idle session held when its bound was last set (BenchmarkIdleSessions
// and TestIdleSessionMemory's log), in bytes of heap and stacks.
const (
	idleSessionPlain = 6000
	idleSessionRace  = 7700
	parkedSession    = 1500
)
