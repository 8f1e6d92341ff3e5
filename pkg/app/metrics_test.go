package app_test

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/pkg/exchange"
)

const metricsYAML = `
helix:
  name: metrics-e2e
  management:
    addr: "127.0.0.1:0"
workflows:
  - id: greet
    trigger: direct://greet
    steps:
      - transform:
          starlang: |
            "hello"
  - id: broken
    trigger: direct://broken
    steps:
      - transform:
          starlang: |
            fail("broken on purpose")
mcps:
  - id: tools
    addr: "127.0.0.1:0"
    expose: [greet, broken]
    api_keys: [metrics-key]
`

// TestMetricsEndToEnd drives every counter /metrics exposes through a running
// application and checks the exact values.
func TestMetricsEndToEnd(t *testing.T) {
	t.Parallel()
	a := startSecure(t, metricsYAML, nil)

	// Workflow calls outside MCP: one succeeds, one fails.
	ctx := context.Background()
	if err := a.Context().Run(ctx, "greet", exchange.New(exchange.InOut)); err != nil {
		t.Fatalf("greet: %v", err)
	}
	if err := a.Context().Run(ctx, "broken", exchange.New(exchange.InOut)); err == nil {
		t.Fatal("broken: want an error")
	}

	// MCP tool calls: one succeeds, one is an isError result.
	endpoint := serverURL(t, a, "tools") + "/mcp"
	cs, err := sdkSession(t, endpoint, http.Header{"X-Api-Key": {"metrics-key"}})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if text, isErr := call(t, cs, "greet", map[string]any{}); isErr || text != "hello" {
		t.Fatalf("greet tool: %q isError=%v", text, isErr)
	}
	if _, isErr := call(t, cs, "broken", map[string]any{}); !isErr {
		t.Fatal("broken tool: want an isError result")
	}

	// A request with a wrong key is rejected by the security stack.
	rc := newRawClient(t)
	if resp, body := rc.post(endpoint, initBody, "X-Api-Key", "wrong-key"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d %s", resp.StatusCode, body)
	}

	resp, body := rc.do(http.MethodGet, "http://"+a.ManagementAddr()+management.MetricsPath, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != management.MetricsContentType {
		t.Fatalf("metrics: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	want := []string{
		`helix_build_info{goversion="` + runtime.Version() + `",version="9.8.7"} 1`,
		`helix_exchanges_total{workflow="broken"} 2`,
		`helix_exchanges_total{workflow="greet"} 2`,
		`helix_exchanges_failed_total{workflow="broken"} 2`,
		`helix_exchanges_failed_total{workflow="greet"} 0`,
		`helix_exchanges_inflight 0`,
		`helix_exchange_duration_seconds_count{workflow="broken"} 2`,
		`helix_exchange_duration_seconds_count{workflow="greet"} 2`,
		`helix_mcp_tool_calls_total{server="tools",tool="broken"} 1`,
		`helix_mcp_tool_calls_total{server="tools",tool="greet"} 1`,
		`helix_mcp_tool_errors_total{server="tools",tool="broken"} 1`,
		`helix_mcp_tool_errors_total{server="tools",tool="greet"} 0`,
		`helix_mcp_rejected_requests_total{reason="invalid api key",server="tools"} 1`,
		// client_golang's Go and process collectors are served beside Helix's families.
		`go_goroutines`, `process_open_fds`,
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		lines[l] = true
		if name, _, ok := strings.Cut(l, " "); ok && !strings.HasPrefix(l, "#") {
			lines[name] = true // a sample without labels, whatever its value
		}
	}
	for _, w := range want {
		if !lines[w] {
			t.Errorf("metrics lack the line %q", w)
		}
	}
	// Exactly one rejection series: the authorised requests were not counted.
	if n := strings.Count(body, "\nhelix_mcp_rejected_requests_total{"); n != 1 {
		t.Errorf("%d rejection series, want 1", n)
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// TestReplayBudgetSettingAndMetrics: helix.mcp.replay_budget sets the process's
// replay budget of resumable MCP streams, and /metrics shows it with what is kept
// and what was dropped.
// Not parallel: the replay budget is the process's, and every application
// another parallel test starts sets it again (to the default).
func TestReplayBudgetSettingAndMetrics(t *testing.T) {
	a := startSecure(t, `
helix:
  management:
    addr: "127.0.0.1:0"
  mcp:
    replay_budget: 2MiB
workflows:
  - id: greet
    trigger: direct://greet
    steps:
      - set-body: "hello"
`, nil)
	rc := newRawClient(t)
	resp, body := rc.do(http.MethodGet, "http://"+a.ManagementAddr()+management.MetricsPath, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	for _, w := range []string{"\nhelix_mcp_replay_budget_bytes 2.097152e+06\n", "\nhelix_mcp_replay_bytes ", "\nhelix_mcp_replay_dropped_events_total ",
		"# TYPE helix_mcp_replay_dropped_events_total counter"} {
		if !strings.Contains(body, w) {
			t.Errorf("metrics lack %q", w)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}
