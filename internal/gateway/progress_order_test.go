package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// burstServer's tool burst sends n progress notifications and answers at once.
func burstServer(n int) func(*sdk.Server) {
	return func(srv *sdk.Server) {
		srv.AddTool(&sdk.Tool{Name: "burst", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			for i := 1; i <= n; i++ {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: float64(n)})
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
		})
	}
}

// rawPost posts one JSON-RPC message and returns the messages of the answer
// in the order they were written (an event stream or a single JSON body).
func rawPost(t *testing.T, url, session string, msg string) ([]map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok || strings.HasPrefix(line, "{") {
			if !ok {
				d = line
			}
			if strings.TrimSpace(d) == "" {
				continue // a priming event
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimSpace(d)), &m); err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			out = append(out, m)
		}
	}
	return out, resp.Header.Get("Mcp-Session-Id")
}

// A call's progress notifications all reach the client before its result,
// however fast the upstream sends them and answers after the last one.
func TestGatewayRelaysEveryProgressBeforeTheResult(t *testing.T) {
	t.Parallel()
	const n = 30
	a := startUpstream(t, "a", burstServer(n))
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	url := "http://" + comp.Addr("gw").String() + "/mcp"
	_, session := rawPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if session == "" {
		t.Fatal("no session")
	}
	rawPost(t, url, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for call := 2; call < 12; call++ {
		msgs, _ := rawPost(t, url, session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"a.burst","arguments":{},"_meta":{"progressToken":"tok-%d"}}}`, call, call))
		var seen []float64
		answered := false
		for _, m := range msgs {
			switch {
			case m["method"] == "notifications/progress":
				p := m["params"].(map[string]any)
				if answered {
					t.Errorf("call %d: progress %v after the result", call, p["progress"])
				}
				if p["progressToken"] != fmt.Sprintf("tok-%d", call) {
					t.Errorf("call %d: progress token %v", call, p["progressToken"])
				}
				seen = append(seen, p["progress"].(float64))
			case m["id"] == float64(call):
				answered = true
			}
		}
		if !answered || len(seen) != n || seen[n-1] != n {
			t.Fatalf("call %d: answered %v, %d progress notifications before the result (want %d): %v", call, answered, len(seen), n, seen)
		}
	}
}
