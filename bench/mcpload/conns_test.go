package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connCounter serves a fakeServer and counts the TCP connections and requests
// it saw, and the client addresses they came from.
type connCounter struct {
	conns, requests atomic.Int64
	mu              sync.Mutex
	peers           map[string]bool
}

func startCounted(t *testing.T, f *fakeServer) (string, *connCounter) {
	t.Helper()
	f.sessions = map[string]bool{}
	cc := &connCounter{peers: map[string]bool{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cc.requests.Add(1)
		f.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s != http.StateNew {
			return
		}
		cc.conns.Add(1)
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		cc.mu.Lock()
		cc.peers[host] = true
		cc.mu.Unlock()
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", cc
}

// A new connection per call: the server sees one connection for every request
// (initialize, the notification, every call, the DELETE); with keep-alive the
// clients' few connections carry them all.
func TestNewConnectionPerCall(t *testing.T) {
	for _, newConn := range []bool{false, true} {
		url, cc := startCounted(t, &fakeServer{})
		cfg := quickConfig(url)
		cfg.Duration, cfg.NewConn = 300*time.Millisecond, newConn
		r, err := runLoad(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Errors != 0 || r.Requests == 0 {
			t.Fatalf("new-conn=%t: requests=%d errors=%d %q", newConn, r.Requests, r.Errors, r.ErrorSamples)
		}
		conns, reqs := cc.conns.Load(), cc.requests.Load()
		if want := connMode(newConn); r.Conn != want {
			t.Errorf("result's conn %q, want %q", r.Conn, want)
		}
		if newConn && conns != reqs {
			t.Errorf("new connection per call: %d connections for %d requests", conns, reqs)
		}
		if !newConn && conns > 2*int64(cfg.Clients) {
			t.Errorf("keep-alive: %d connections for %d clients (%d requests)", conns, cfg.Clients, reqs)
		}
	}
}

// -sources N: the clients' connections come from 127.0.0.1 … 127.0.0.N.
func TestSourcesSpreadTheClients(t *testing.T) {
	url, cc := startCounted(t, &fakeServer{})
	cfg := quickConfig(url)
	cfg.Clients, cfg.Sources, cfg.Duration, cfg.NewConn = 8, 4, 200*time.Millisecond, true
	r, err := runLoad(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Requests == 0 || r.Sources != 4 {
		t.Fatalf("requests=%d errors=%d sources=%d %q", r.Requests, r.Errors, r.Sources, r.ErrorSamples)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, want := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		if !cc.peers[want] {
			t.Errorf("no connection from %s; the server saw %v", want, cc.peers)
		}
	}
	if len(cc.peers) != 4 {
		t.Errorf("connections from %v, want 127.0.0.1 … 127.0.0.4", cc.peers)
	}
}

func TestSourcesNeedAnIPv4LoopbackServer(t *testing.T) {
	for _, c := range []struct {
		n    int
		url  string
		want string
	}{
		{0, "http://127.0.0.1:1/mcp", "want 1 to 254"},
		{255, "http://127.0.0.1:1/mcp", "want 1 to 254"},
		{4, "http://localhost:1/mcp", `not "localhost:1"`},
		{4, "http://[::1]:1/mcp", `not "[::1]:1"`},
		{4, "http://10.0.0.1:1/mcp", `not "10.0.0.1:1"`},
	} {
		_, err := loopbackSources(c.n, c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("loopbackSources(%d, %s): %v, want an error saying %q", c.n, c.url, err, c.want)
		}
	}
	if s, err := loopbackSources(1, "http://example.com/mcp"); err != nil || s != nil {
		t.Errorf("one source is the system's choice, any server: %v %v", s, err)
	}
	err := run(context.Background(), []string{"-url", "http://localhost:1/mcp", "-sources", "2"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "IPv4 loopback") {
		t.Errorf("run with -sources against localhost: %v", err)
	}
}

func TestFileLimitIsChecked(t *testing.T) {
	if err := checkFileLimit(1); err != nil {
		t.Fatal(err)
	}
	if err := checkFileLimit(1 << 40); err == nil || !strings.Contains(err.Error(), "file descriptors") {
		t.Fatalf("a trillion clients: %v", err)
	}
}

// The matrix pairs each run with the base's of the same cell and round: the
// ratios per round decide, and cells do not mix.
func TestMatrixComparesWithinCellAndRound(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.jsonl")
	var lines []string
	for _, r := range []result{
		// stateful, keep-alive, 16 clients: ratios 0.9, 0.95, 1.0 (a slow round 2 for both).
		{Label: "limit", Mode: "stateful", Conn: "keep-alive", Clients: 16, Round: 1, RPS: 1000, P99us: 100, CPUusPerCall: 30},
		{Label: "helix", Mode: "stateful", Conn: "keep-alive", Clients: 16, Round: 1, RPS: 900, P99us: 120, CPUusPerCall: 40},
		{Label: "limit", Mode: "stateful", Conn: "keep-alive", Clients: 16, Round: 2, RPS: 400, P99us: 300, CPUusPerCall: 30},
		{Label: "helix", Mode: "stateful", Conn: "keep-alive", Clients: 16, Round: 2, RPS: 380, P99us: 330, CPUusPerCall: 40},
		{Label: "helix", Mode: "stateful", Conn: "keep-alive", Clients: 16, Round: 3, RPS: 1000, P99us: 100, CPUusPerCall: 40},
		{Label: "limit", Mode: "stateful", Conn: "keep-alive", Clients: 16, Round: 3, RPS: 1000, P99us: 100, CPUusPerCall: 30},
		// the same clients with a new connection per call: another cell, a falloff.
		{Label: "limit", Mode: "stateful", Conn: "new", Clients: 16, Round: 1, RPS: 500, P99us: 200},
		{Label: "helix", Mode: "stateful", Conn: "new", Clients: 16, Round: 1, RPS: 300, P99us: 400, Errors: 2},
		// no base in its round: left out.
		{Label: "helix", Mode: "stateless", Conn: "keep-alive", Clients: 1, Round: 1, RPS: 10},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tsv := filepath.Join(t.TempDir(), "m.tsv")
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"matrix", "-tsv", tsv, out}, &buf); err != nil {
		t.Fatal(err)
	}
	table := buf.String()
	for _, want := range []string{
		"| stateful | keep-alive | 16 | helix | 3 | 1000 | 900 | **0.95** | 0.90–1.00 | 100 | 120 | **1.10** | 30 | 40 |",
		"| stateful | new | 16 | helix | 1 | 500 | 300 | **0.60** | 0.60–0.60 | 200 | 400 | **2.00** |",
		"| 0.0 | 0 | met |",
		"| not met: throughput, p99, errors |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("matrix table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "stateless") {
		t.Errorf("a run without its base's was paired:\n%s", table)
	}
	if strings.Index(table, "| keep-alive | 16 |") > strings.Index(table, "| new | 16 |") {
		t.Errorf("keep-alive rows come first:\n%s", table)
	}
	raw, err := os.ReadFile(tsv)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(raw), "\n"); got != 3 {
		t.Errorf("tsv has %d lines, want a header and 2 rows:\n%s", got, raw)
	}
	if err := run(context.Background(), []string{"matrix", "-base", "nobody", out}, &buf); err == nil {
		t.Error("a base without runs: want an error")
	}
}

// -clients N: the server holds N connections, each carrying one client's
// session from its initialize to its DELETE. A shared pool opens every session
// on the same connection and, under load, dials connections beside the clients'.
func TestEachClientItsOwnConnection(t *testing.T) {
	f := &fakeServer{sessions: map[string]bool{}}
	type connKey struct{}
	var (
		mu             sync.Mutex
		nextConn       int
		open, mostOpen int
		perConn        = map[int]map[string]bool{} // connection → the sessions its requests named
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Context().Value(connKey{}).(int)
		f.ServeHTTP(w, r)
		sid := r.Header.Get(headerSession)
		if sid == "" {
			sid = w.Header().Get(headerSession) // initialize: the id it was given
		}
		mu.Lock()
		perConn[id][sid] = true
		mu.Unlock()
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		mu.Lock()
		defer mu.Unlock()
		nextConn++
		perConn[nextConn] = map[string]bool{}
		return context.WithValue(ctx, connKey{}, nextConn)
	}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open++
			mostOpen = max(mostOpen, open)
		case http.StateClosed, http.StateHijacked:
			open--
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	cfg := quickConfig(srv.URL + "/mcp")
	cfg.Clients, cfg.Duration = 16, 300*time.Millisecond
	r, err := runLoad(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Requests == 0 {
		t.Fatalf("requests=%d errors=%d %q", r.Requests, r.Errors, r.ErrorSamples)
	}
	mu.Lock()
	defer mu.Unlock()
	if mostOpen != cfg.Clients {
		t.Errorf("%d clients held up to %d connections at once, want one each", cfg.Clients, mostOpen)
	}
	clients := map[string]bool{}
	for id, sessions := range perConn {
		if len(sessions) != 1 {
			t.Errorf("connection %d carried the requests of sessions %v, want one client's", id, sessions)
		}
		for s := range sessions {
			clients[s] = true
		}
	}
	if len(clients) != cfg.Clients {
		t.Errorf("the connections carried %d sessions, want %d", len(clients), cfg.Clients)
	}
}
