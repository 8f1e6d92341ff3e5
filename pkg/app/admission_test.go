package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/management"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const admissionYAML = `
helix:
  management:
    addr: "127.0.0.1:0"
workflows:
  - id: slow
    trigger: direct://slow
    steps:
      - sleep: 1s
mcps:
  - id: fast
    addr: "127.0.0.1:0"
    stateless: true
    expose: [slow]
    admission: {max_running: 2, queue: -1}
  - id: sse
    addr: "127.0.0.1:0"
    transport: sse
    expose: [slow]
    admission: {max_running: 1, queue: -1}
`

// TestAdmissionEndToEnd: a server with admission: {max_running: 2, queue: -1}
// (stateless, so tools/call takes the fast path) refuses the calls beyond 2
// with 503 + Retry-After and the -32030 body, answers pings, runs the admitted
// calls to their end, and /metrics counts it all. An SSE server refuses its
// excess call on the POST, and its admitted call is answered on the stream.
func TestAdmissionEndToEnd(t *testing.T) {
	t.Parallel()
	a := startSecure(t, admissionYAML, nil)
	endpoint := serverURL(t, a, "fast") + "/mcp"
	rc := newRawClient(t)
	callBody := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{}}}`, id)
	}
	running := func(id string) int {
		for _, s := range a.MCPServers().AdmissionStats() {
			if s.Server == id {
				return s.Running
			}
		}
		return -1
	}
	waitRunning := func(id string, n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for running(id) != n {
			if time.Now().After(deadline) {
				t.Fatalf("server %s: %d running, want %d", id, running(id), n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(callBody(10+i)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := rc.c.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"result"`) || strings.Contains(string(b), `"isError":true`) {
				errs <- fmt.Sprintf("admitted call: %d %s", resp.StatusCode, b)
			}
		}()
	}
	waitRunning("fast", 2)
	for i := range 2 {
		resp, body := rc.post(endpoint, callBody(20+i))
		var out struct {
			ID    int
			Error struct {
				Code int
				Data struct {
					RetryAfter int `json:"retry_after"`
				}
			}
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			json.Unmarshal([]byte(body), &out) != nil || out.ID != 20+i || out.Error.Code != -32030 || out.Error.Data.RetryAfter < 1 {
			t.Fatalf("excess call: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	if resp, body := rc.post(endpoint, pingBody); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("ping at the limit: %d %s", resp.StatusCode, body)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	// SSE: the admitted call is answered on the stream, the excess one refused.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "sse", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.SSEClientTransport{Endpoint: serverURL(t, a, "sse") + "/sse"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	first := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		first <- err
	}()
	waitRunning("sse", 1)
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}}); err == nil ||
		!strings.Contains(err.Error(), "503") && !strings.Contains(err.Error(), "Service Unavailable") && !strings.Contains(err.Error(), "server busy") {
		t.Fatalf("excess SSE call: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("admitted SSE call: %v", err)
	}
	waitRunning("sse", 0)

	resp, body := rc.do(http.MethodGet, "http://"+a.ManagementAddr()+management.MetricsPath, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`helix_mcp_admission_admitted_total{server="fast"} 2`,
		`helix_mcp_admission_refused_total{server="fast"} 2`,
		`helix_mcp_admission_limit{server="fast"} 2`,
		`helix_mcp_admission_running{server="fast"} 0`,
		`helix_mcp_admission_admitted_total{server="sse"} 1`,
		`helix_mcp_admission_refused_total{server="sse"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s\n%s", want, body)
		}
	}
}

// TestAdmissionAutoIsAdaptive: max_running: auto builds the adaptive limit,
// starting at transport.AutoMaxRunning; a number builds a fixed one.
func TestAdmissionAutoIsAdaptive(t *testing.T) {
	t.Parallel()
	a := startSecure(t, `
workflows:
  - id: w
    trigger: direct://w
    steps:
      - log: "w"
mcps:
  - id: auto
    addr: "127.0.0.1:0"
    expose: [w]
    admission: {max_running: auto}
  - id: fixed
    addr: "127.0.0.1:0"
    expose: [w]
    admission: {max_running: 3}
`, nil)
	got := map[string]transport.AdmissionStats{}
	for _, s := range a.MCPServers().AdmissionStats() {
		got[s.Server] = s.AdmissionStats
	}
	if s := got["auto"]; !s.Adaptive || s.MaxRunning != transport.AutoMaxRunning() || s.Queue != s.MaxRunning {
		t.Errorf("auto: %+v", s)
	}
	if s := got["fixed"]; s.Adaptive || s.MaxRunning != 3 {
		t.Errorf("fixed: %+v", s)
	}
}
