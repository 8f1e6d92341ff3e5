package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is a minimal stateful MCP echo server for testing the load tool
// itself: it answers with JSON or, with sse set, with a one-event SSE stream that
// a progress notification precedes (as go-sdk streams may).
type fakeServer struct {
	sse      bool
	failEach int // every failEach-th call returns isError (0: never)

	mu       sync.Mutex
	sessions map[string]bool
	calls    int
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sid := r.Header.Get(headerSession)
	if req.Method != "initialize" && !f.sessions[sid] {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch req.Method {
	case "initialize":
		sid = fmt.Sprintf("s%d", len(f.sessions)+1)
		f.sessions[sid] = true
		w.Header().Set(headerSession, sid)
		result = `{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}`
	case "tools/list":
		result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
	case "tools/call":
		f.calls++
		isErr := f.failEach > 0 && f.calls%f.failEach == 0
		text, _ := json.Marshal(req.Params.Arguments.Text)
		result = fmt.Sprintf(`{"content":[{"type":"text","text":%s}],"isError":%t}`, text, isErr)
	default:
		result = "null"
	}
	msg := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`
	if f.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, msg)
}

func startFake(t *testing.T, f *fakeServer) string {
	t.Helper()
	f.sessions = map[string]bool{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func quickConfig(url string) loadConfig {
	return loadConfig{
		Label: "t", URL: url, Clients: 4, Duration: 700 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Protocol: defaultProtocol, Tool: "echo", Args: `{"text":"hi"}`, PID: os.Getpid(), Timeout: 30 * time.Second,
	}
}

func TestLoadAgainstJSONAndSSEAnswers(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%t", sse), func(t *testing.T) {
			f := &fakeServer{sse: sse}
			r, err := runLoad(context.Background(), quickConfig(startFake(t, f)))
			if err != nil {
				t.Fatal(err)
			}
			if r.Errors != 0 || r.Requests == 0 {
				t.Fatalf("requests=%d errors=%d %q", r.Requests, r.Errors, r.ErrorSamples)
			}
			if !(r.P50us > 0 && r.P50us <= r.P99us && r.P99us <= r.P999us && r.P999us <= r.MaxUs) {
				t.Errorf("percentiles out of order: %+v", r)
			}
			if r.CPUusPerCall < 0 || r.PeakRSSKB <= 0 || r.RSSKB <= 0 {
				t.Errorf("process figures missing: cpu %v rss %d peak %d", r.CPUusPerCall, r.RSSKB, r.PeakRSSKB)
			}
			if len(f.sessions) != 4 {
				t.Errorf("%d sessions opened, want one per client (4)", len(f.sessions))
			}
		})
	}
}

func TestLoadCountsToolErrorsAndHTTPErrors(t *testing.T) {
	f := &fakeServer{failEach: 3}
	r, err := runLoad(context.Background(), quickConfig(startFake(t, f)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors == 0 || !strings.Contains(strings.Join(r.ErrorSamples, " "), "isError") {
		t.Fatalf("tool errors not counted: errors=%d %q", r.Errors, r.ErrorSamples)
	}

	// Stateless calls to a stateful server get 404s: the run must not start silently.
	cfg := quickConfig(startFake(t, &fakeServer{}))
	cfg.Stateless = true
	r, err = runLoad(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 0 || r.Errors == 0 || !strings.Contains(r.ErrorSamples[0], "404") {
		t.Fatalf("want only 404 errors, got requests=%d errors=%d %q", r.Requests, r.Errors, r.ErrorSamples)
	}
}

func TestRunCommandExitsWithErrorsAndWritesJSON(t *testing.T) {
	url := startFake(t, &fakeServer{failEach: 2})
	out := filepath.Join(t.TempDir(), "r.jsonl")
	var buf bytes.Buffer
	err := run(context.Background(), []string{"run", "-url", url, "-clients", "2", "-duration", "300ms", "-warmup", "0s", "-json", out, "-label", "bad"}, &buf)
	if err == nil || !strings.Contains(err.Error(), "failed calls") {
		t.Fatalf("want a failed-calls error, got %v\n%s", err, buf.String())
	}
	good := startFake(t, &fakeServer{})
	for range 3 {
		if err := run(context.Background(), []string{"-url", good, "-clients", "2", "-duration", "200ms", "-warmup", "0s", "-json", out, "-label", "limit"}, &buf); err != nil {
			t.Fatal(err)
		}
	}
	buf.Reset()
	if err := run(context.Background(), []string{"summarize", out}, &buf); err != nil {
		t.Fatal(err)
	}
	table := buf.String()
	if !strings.Contains(table, "| limit | 3 |") || !strings.Contains(table, "| 1.00 |") || !strings.Contains(table, "| bad | 1 |") {
		t.Fatalf("summary table:\n%s", table)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-clients", "1"},
		{"-url", "http://127.0.0.1:1/mcp", "-args", "[1]"},
		{"-url", "http://127.0.0.1:1/mcp", "-clients", "0"},
		{"bogus"},
		{"startup", "-url", "http://x"},
		{"summarize"},
	} {
		if err := run(context.Background(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: want a usage error", args)
		}
	}
}

func TestFirstSSEMessage(t *testing.T) {
	stream := "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":7}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\n" + "data: \"id\":3,\"result\":{}}\n\n"
	got, err := firstSSEMessage(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"jsonrpc\":\"2.0\",\n\"id\":3,\"result\":{}}"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := firstSSEMessage(strings.NewReader("data: {\"method\":\"x\"}\n\n")); err == nil {
		t.Fatal("stream without a response: want an error")
	}
}

func TestPercentileAndMedian(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 1000; i++ {
		d = append(d, time.Duration(i))
	}
	for q, want := range map[float64]time.Duration{0.5: 500, 0.99: 990, 0.999: 999, 1: 1000} {
		if got := percentile(d, q); got != want {
			t.Errorf("p%v = %d, want %d", q, got, want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("empty percentile")
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median = %v", m)
	}
}

func TestProcReaders(t *testing.T) {
	if _, err := procCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	rss, peak, err := procMem(os.Getpid())
	if err != nil || rss <= 0 || peak < rss {
		t.Fatalf("rss %d peak %d err %v", rss, peak, err)
	}
	if _, err := procCPU(-5); err == nil {
		t.Fatal("bad pid: want an error")
	}
}

// TestMain doubles as a fake server process for the startup test: with
// MCPLOAD_FAKE_ADDR set, the test binary serves fakeServer there until killed.
func TestMain(m *testing.M) {
	if addr := os.Getenv("MCPLOAD_FAKE_ADDR"); addr != "" {
		time.Sleep(20 * time.Millisecond) // a start-up delay the measurement must include
		f := &fakeServer{sessions: map[string]bool{}}
		if err := http.ListenAndServe(addr, f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		return
	}
	os.Exit(m.Run())
}

func TestStartupMeasuresAChildServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("MCPLOAD_FAKE_ADDR", addr)
	var buf bytes.Buffer
	out := filepath.Join(t.TempDir(), "s.jsonl")
	err = run(context.Background(), []string{"startup", "-runs", "2", "-json", out, "-url", "http://" + addr + "/mcp", "--", os.Args[0]}, &buf)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Runs     int     `json:"runs"`
		MedianMS float64 `json:"median_ms"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 2 || rep.MedianMS < 20 {
		t.Fatalf("report %+v: want 2 runs of at least the child's 20 ms delay", rep)
	}

	// A command that exits at once is reported, not waited for.
	err = run(context.Background(), []string{"startup", "-runs", "1", "-url", "http://" + addr + "/mcp", "--", "false"}, &buf)
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("want an exited error, got %v", err)
	}
}

// The per-round ratio compares each server with the base of its own round, so a
// round where the whole machine was slow does not count against one server only.
func TestSummarizeRatioPerRound(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.jsonl")
	var lines []string
	for _, r := range []result{
		{Label: "limit", Round: 1, RPS: 1000}, {Label: "helix", Round: 1, RPS: 900},
		{Label: "limit", Round: 2, RPS: 400}, {Label: "helix", Round: 2, RPS: 360}, // a slow round
		{Label: "helix", Round: 3, RPS: 1000}, {Label: "limit", Round: 3, RPS: 1000},
		{Label: "helix", Round: 4, RPS: 500}, // its base is missing: not paired
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
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"summarize", out}, &buf); err != nil {
		t.Fatal(err)
	}
	// helix: median req/s 700 against the limit's 1000 (0.70); per round 0.9, 0.9, 1.0.
	if !strings.Contains(buf.String(), "| helix | 4 | 700 | 0.70 | 0.90 |") {
		t.Fatalf("summary table:\n%s", buf.String())
	}
}

func TestStealShare(t *testing.T) {
	a, err := parseMachineTicks([]byte("cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	if err != nil || a.total != 1000 || a.steal != 35 {
		t.Fatalf("parse: %+v %v", a, err)
	}
	b := machineTicks{total: 2000, steal: 235}
	if got := stealPct(a, b); got != 20 {
		t.Fatalf("steal share %v, want 20", got)
	}
	if got := stealPct(machineTicks{}, b); got != -1 {
		t.Fatalf("without a first reading: %v, want -1", got)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		if _, err := parseMachineTicks([]byte(bad)); err == nil {
			t.Errorf("parseMachineTicks(%q): want an error", bad)
		}
	}
	if _, err := readMachineTicks(); err != nil {
		t.Fatal(err)
	}
}
