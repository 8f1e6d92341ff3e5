package management

import (
	"strings"
	"testing"
)

func TestWriteMetricsFormat(t *testing.T) {
	m := Metrics{
		Version: "1.2.3", GoVersion: "go1.26.8", InFlight: 2,
		// Deliberately unsorted: the output must not depend on input order.
		Workflows: []WorkflowMetrics{
			{Workflow: "zeta", Exchanges: 3, Failed: 1, DurationSeconds: 0.25},
			{Workflow: `we"ird\path` + "\nx", Exchanges: 1, DurationSeconds: 1.5e-06},
		},
		ToolCalls: []ToolCallMetrics{
			{Server: "s2", Tool: "a", Calls: 1},
			{Server: "s1", Tool: "b", Calls: 4, Errors: 2},
			{Server: "s1", Tool: "a", Calls: 5},
		},
		Rejected: []RejectedMetrics{{Server: "s1", Reason: "rate limit exceeded", Count: 7}, {Server: "s1", Reason: "invalid api key", Count: 1}},
	}
	want := `# HELP helix_build_info Helix build information; the value is always 1.
# TYPE helix_build_info gauge
helix_build_info{version="1.2.3",goversion="go1.26.8"} 1
# HELP helix_exchanges_total Exchanges run through a workflow's pipeline.
# TYPE helix_exchanges_total counter
helix_exchanges_total{workflow="we\"ird\\path\nx"} 1
helix_exchanges_total{workflow="zeta"} 3
# HELP helix_exchanges_failed_total Exchanges whose workflow pipeline ended with an error.
# TYPE helix_exchanges_failed_total counter
helix_exchanges_failed_total{workflow="we\"ird\\path\nx"} 0
helix_exchanges_failed_total{workflow="zeta"} 1
# HELP helix_exchanges_inflight Exchanges running a workflow pipeline now.
# TYPE helix_exchanges_inflight gauge
helix_exchanges_inflight 2
# HELP helix_exchange_duration_seconds Time exchanges spent in a workflow's pipeline.
# TYPE helix_exchange_duration_seconds summary
helix_exchange_duration_seconds_sum{workflow="we\"ird\\path\nx"} 1.5e-06
helix_exchange_duration_seconds_count{workflow="we\"ird\\path\nx"} 1
helix_exchange_duration_seconds_sum{workflow="zeta"} 0.25
helix_exchange_duration_seconds_count{workflow="zeta"} 3
# HELP helix_mcp_tool_calls_total MCP tools/call requests that reached the tool.
# TYPE helix_mcp_tool_calls_total counter
helix_mcp_tool_calls_total{server="s1",tool="a"} 5
helix_mcp_tool_calls_total{server="s1",tool="b"} 4
helix_mcp_tool_calls_total{server="s2",tool="a"} 1
# HELP helix_mcp_tool_errors_total MCP tool calls answered with an isError result.
# TYPE helix_mcp_tool_errors_total counter
helix_mcp_tool_errors_total{server="s1",tool="a"} 0
helix_mcp_tool_errors_total{server="s1",tool="b"} 2
helix_mcp_tool_errors_total{server="s2",tool="a"} 0
# HELP helix_mcp_rejected_requests_total MCP requests rejected by a server's security settings.
# TYPE helix_mcp_rejected_requests_total counter
helix_mcp_rejected_requests_total{server="s1",reason="invalid api key"} 1
helix_mcp_rejected_requests_total{server="s1",reason="rate limit exceeded"} 7
# HELP helix_agent_runs_total Agent runs (one per message answered or failed).
# TYPE helix_agent_runs_total counter
# HELP helix_agent_errors_total Agent runs that failed.
# TYPE helix_agent_errors_total counter
# HELP helix_agent_iterations_total Model turns of agent runs.
# TYPE helix_agent_iterations_total counter
# HELP helix_agent_tool_calls_total Tool calls agents made.
# TYPE helix_agent_tool_calls_total counter
# HELP helix_agent_input_tokens_total Input tokens agent runs cost, as the providers counted them.
# TYPE helix_agent_input_tokens_total counter
# HELP helix_agent_output_tokens_total Output tokens agent runs cost, as the providers counted them.
# TYPE helix_agent_output_tokens_total counter
# HELP helix_rag_documents_ingested_total Documents a pipeline chunked, embedded and stored (new or changed).
# TYPE helix_rag_documents_ingested_total counter
# HELP helix_rag_ingest_errors_total Documents a pipeline failed to ingest.
# TYPE helix_rag_ingest_errors_total counter
# HELP helix_rag_chunks Chunks in a pipeline's store.
# TYPE helix_rag_chunks gauge
# HELP helix_rag_queries_total Queries a pipeline answered or failed.
# TYPE helix_rag_queries_total counter
# HELP helix_rag_query_errors_total Queries a pipeline failed.
# TYPE helix_rag_query_errors_total counter
`
	var sb strings.Builder
	if err := WriteMetrics(&sb, m); err != nil {
		t.Fatal(err)
	}
	if got := sb.String(); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
	if m.Workflows[0].Workflow != "zeta" || m.ToolCalls[0].Server != "s2" {
		t.Error("WriteMetrics reordered the caller's slices")
	}
}

func TestEscapeHelp(t *testing.T) {
	if got := escapeHelp("a\\b\n\"c\""); got != `a\\b\n"c"` {
		t.Errorf("escapeHelp: %q", got)
	}
}

func TestMetricsRoute(t *testing.T) {
	s := startServer(t, Options{Metrics: func() Metrics {
		return Metrics{Version: "9", InFlight: 4}
	}})
	resp, body := get(t, "http://"+s.Addr()+MetricsPath)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != MetricsContentType {
		t.Fatalf("metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, line := range []string{`helix_build_info{version="9",goversion="`, "\nhelix_exchanges_inflight 4\n"} {
		if !strings.Contains(body, line) {
			t.Errorf("metrics body lacks %q:\n%s", line, body)
		}
	}
	// Without a Metrics func the families are still announced.
	s2 := startServer(t, Options{})
	_, body = get(t, "http://"+s2.Addr()+MetricsPath)
	if !strings.Contains(body, `helix_build_info{version="dev",`) || !strings.Contains(body, "# TYPE helix_mcp_rejected_requests_total counter\n") {
		t.Errorf("default metrics:\n%s", body)
	}
}

func TestPipelineMetrics(t *testing.T) {
	m := Metrics{Version: "1", GoVersion: "go", Pipelines: []PipelineMetrics{
		{Pipeline: "z", DocumentsIngested: 3, Chunks: 12, Queries: 2},
		{Pipeline: "a", IngestErrors: 1, QueryErrors: 1},
	}}
	var sb strings.Builder
	if err := WriteMetrics(&sb, m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"helix_rag_documents_ingested_total{pipeline=\"a\"} 0\nhelix_rag_documents_ingested_total{pipeline=\"z\"} 3\n",
		"helix_rag_chunks{pipeline=\"z\"} 12\n",
		"helix_rag_ingest_errors_total{pipeline=\"a\"} 1\n",
		"helix_rag_queries_total{pipeline=\"z\"} 2\n",
		"helix_rag_query_errors_total{pipeline=\"a\"} 1\n",
	} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
