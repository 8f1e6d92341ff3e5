package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// gaugeServer has a tool "work" that records how many of its calls run at once.
func gaugeServer(t *testing.T, running, peak *atomic.Int64) *sdk.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "gauge", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}})
	srv.AddTool(&sdk.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(30 * time.Millisecond)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	return srv
}

// TestSessionCallsAreBounded: a batch of many calls, and many POSTs at once, never
// run more than MaxConcurrentCalls of one session at a time; all are answered.
func TestSessionCallsAreBounded(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int64
	url := rawServer(t, gaugeServer(t, &running, &peak), Options{MaxConcurrentCalls: 3})
	sid := initSessionWith(t, url, initBody("2025-03-26", "{}"))
	h := map[string]string{"Mcp-Session-Id": sid}
	var calls []string
	for i := range 20 {
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"work","arguments":{}}}`, 100+i))
	}
	r := send(t, http.MethodPost, url, h, "["+strings.Join(calls, ",")+"]")
	var answers []json.RawMessage
	if err := json.Unmarshal([]byte(r.body), &answers); err != nil || len(answers) != 20 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	if p := peak.Load(); p > 3 {
		t.Fatalf("a batch ran %d calls of one session at once, limit 3", p)
	}
	peak.Store(0)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := send(t, http.MethodPost, url, h, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"work","arguments":{}}}`, 200+i))
			if r.status != http.StatusOK || !strings.Contains(r.body, `"ok"`) {
				t.Errorf("call %d: %d %s", i, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > 3 {
		t.Fatalf("parallel POSTs ran %d calls of one session at once, limit 3", p)
	}
}
