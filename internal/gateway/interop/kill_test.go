package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
)

// countingUpstream is a go-sdk MCP server with one tool, work, that counts how
// often it ran for each n. A call with n >= 100 stays in flight until the test
// ends (the upstream is slow); any other answers at once.
type countingUpstream struct {
	mu   sync.Mutex
	runs map[int]int
	url  string
}

type workArgs struct {
	N int `json:"n"`
}

func startCountingUpstream(t *testing.T) *countingUpstream {
	t.Helper()
	u := &countingUpstream{runs: map[int]int{}}
	done := make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "counting", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "work"}, func(ctx context.Context, _ *sdk.CallToolRequest, a workArgs) (*sdk.CallToolResult, any, error) {
		u.mu.Lock()
		u.runs[a.N]++
		u.mu.Unlock()
		if a.N >= 100 {
			select { // the behaviour under test: a slow upstream, in flight at the kill
			case <-ctx.Done():
			case <-done:
			}
			return nil, nil, context.Canceled
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint("did ", a.N)}}}, nil, nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(done) }) // runs before ts.Close: held handlers return
	u.url = ts.URL
	return u
}

func (u *countingUpstream) count(n int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.runs[n]
}

// mcpPost posts one JSON-RPC message on session sid ("" before initialize) and
// returns the session id and the body (a JSON answer or an event stream).
func mcpPost(ctx context.Context, url, sid, body string) (string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode >= 300 {
		return "", "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return resp.Header.Get("Mcp-Session-Id"), string(b), nil
}

func mcpSession(t *testing.T, url string) string {
	t.Helper()
	sid, body, err := mcpPost(t.Context(), url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"kill","version":"1"}}}`)
	if err != nil || sid == "" {
		t.Fatalf("initialize: %v %s", err, body)
	}
	if _, _, err := mcpPost(t.Context(), url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	return sid
}

func workCall(n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"work","arguments":{"n":%d}}}`, n+10, n)
}

// auditWritten reads helix_gateway_audit_records_written_total from the
// management server's /metrics: the records the file sink fsynced.
func auditWritten(t *testing.T, mgmt string) int {
	t.Helper()
	resp, err := http.Get(mgmt + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "helix_gateway_audit_records_written_total{"); ok {
			f := strings.Fields(rest[strings.Index(rest, "}")+1:])
			n, _ := strconv.ParseFloat(f[0], 64)
			return int(n)
		}
	}
	return 0
}

// TestGatewayKilledMidCall: a gateway process killed with SIGKILL while calls
// are in flight at a slow upstream. Every call the client saw answered ran
// once upstream; the calls in flight failed at the client (the connection was
// lost) and the restarted gateway did not send them again; the audit file
// holds every record the sink acknowledged (fsynced) before the kill, and
// each complete line of it is a whole record.
func TestGatewayKilledMidCall(t *testing.T) {
	t.Parallel()
	up := startCountingUpstream(t)
	dir := t.TempDir()
	auditFile := filepath.Join(dir, "audit.jsonl")
	port, mgmtPort := testtools.FreePort(t), testtools.FreePort(t)
	file := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`
helix:
  data_dir: %s
  management: { addr: "127.0.0.1:%d" }
mcps:
  - id: gateway
    addr: "127.0.0.1:%d"
    upstreams:
      - { id: up, url: %s, prefix: "" }
    audit:
      sink: %s
      arguments: full
`, yamlQuote(filepath.Join(dir, "data")), mgmtPort, port, yamlQuote(up.url), yamlQuote("file://"+filepath.ToSlash(auditFile)))), 0o644); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	mgmt := fmt.Sprintf("http://127.0.0.1:%d", mgmtPort)
	gw := start(t, false, nil, testtools.HelixBinary(t), "run", file)
	gw.listening(t, port)

	const answered, inFlight = 20, 5
	sid := mcpSession(t, url)
	for n := range answered {
		_, body, err := mcpPost(t.Context(), url, sid, workCall(n))
		if err != nil || !strings.Contains(body, fmt.Sprintf("did %d", n)) {
			t.Fatalf("call %d: %v %s", n, err, body)
		}
	}
	// Every answered call's record is fsynced before the kill, so that the
	// file must hold them all (the sink acknowledges after the fsync).
	testtools.Eventually(t, "the audit sink acknowledged the answered calls", func() bool { return auditWritten(t, mgmt) >= answered })
	errs := make(chan error, inFlight)
	for i := range inFlight {
		go func() {
			_, body, err := mcpPost(t.Context(), url, sid, workCall(100+i))
			if err == nil {
				err = fmt.Errorf("answered: %s", body)
			}
			errs <- err
		}()
	}
	testtools.Eventually(t, "the slow calls reached the upstream", func() bool {
		for i := range inFlight {
			if up.count(100+i) == 0 {
				return false
			}
		}
		return true
	})
	acked := auditWritten(t, mgmt)
	if err := gw.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-gw.exited
	for range inFlight {
		if err := <-errs; err == nil || strings.HasPrefix(err.Error(), "answered") {
			t.Errorf("a call in flight at the kill: %v, want the connection lost", err)
		}
	}

	// The restarted gateway (same files, same audit spool) serves new calls
	// and sends none of the calls the killed one had in flight again.
	gw2 := start(t, true, nil, testtools.HelixBinary(t), "run", file)
	gw2.listening(t, port)
	sid2 := mcpSession(t, url)
	if _, body, err := mcpPost(t.Context(), url, sid2, workCall(50)); err != nil || !strings.Contains(body, "did 50") {
		t.Fatalf("a call after the restart: %v %s", err, body)
	}
	for n := range answered {
		if c := up.count(n); c != 1 {
			t.Errorf("answered call %d ran %d times upstream, want once", n, c)
		}
	}
	for i := range inFlight {
		if c := up.count(100 + i); c != 1 {
			t.Errorf("call %d, in flight at the kill, ran %d times upstream, want once (never retried)", 100+i, c)
		}
	}

	raw, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	if !strings.HasSuffix(string(raw), "\n") {
		lines = lines[:len(lines)-1] // a line the kill cut short is no acknowledged record
	}
	seen := map[int]bool{}
	records := 0
	for _, l := range lines {
		if l == "" {
			continue
		}
		var r gateway.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		records++
		var a workArgs
		if r.Outcome == gateway.OutcomeOK && json.Unmarshal(r.Arguments, &a) == nil {
			seen[a.N] = true
		}
	}
	if records < acked {
		t.Errorf("the audit file holds %d records, the sink had acknowledged %d before the kill", records, acked)
	}
	for n := range answered {
		if !seen[n] {
			t.Errorf("the audit file has no record of answered call %d:\n%s", n, raw)
		}
	}
}
