package management

import (
	"bufio"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// MetricsPath serves the metrics in the Prometheus text exposition format.
const MetricsPath = "/metrics"

// MetricsContentType is the Prometheus text exposition format, version 0.0.4.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// Metrics is a snapshot of the counters /metrics exposes. The application fills
// it from the engine and the MCP servers; this package only formats it, so the
// engine stays free of monitoring concerns.
type Metrics struct {
	Version   string // Helix version; "dev" when empty
	GoVersion string // runtime.Version() when empty
	InFlight  int64  // exchanges running a workflow pipeline now
	Workflows []WorkflowMetrics
	ToolCalls []ToolCallMetrics
	Rejected  []RejectedMetrics
	Agents    []AgentMetrics
	Pipelines []PipelineMetrics
	Cluster   *ClusterMetrics // nil without helix.cluster.leader
}

// ClusterMetrics are this replica's part in the leader election of helix.cluster.
type ClusterMetrics struct {
	Cluster string // the election's name
	Leader  bool   // this replica leads now
	Terms   uint64 // terms of leadership this replica began
}

// PipelineMetrics are the counters of one RAG pipeline.
type PipelineMetrics struct {
	Pipeline          string
	DocumentsIngested uint64 // documents (re)written to the store
	IngestErrors      uint64 // documents that failed to ingest
	Queries           uint64
	QueryErrors       uint64
	Chunks            int64 // chunks in the store
}

// AgentMetrics are the totals of one agent.
type AgentMetrics struct {
	Agent                     string
	Runs                      uint64
	Errors                    uint64 // runs that failed
	Iterations                uint64 // model turns
	ToolCalls                 uint64
	InputTokens, OutputTokens uint64
}

// WorkflowMetrics are the totals of one workflow.
type WorkflowMetrics struct {
	Workflow        string
	Exchanges       uint64
	Failed          uint64
	DurationSeconds float64 // summed pipeline time
}

// ToolCallMetrics are the totals of one MCP tool of one server.
type ToolCallMetrics struct {
	Server, Tool string
	Calls        uint64
	Errors       uint64 // isError results
}

// RejectedMetrics counts requests one MCP server's security rejected for a reason.
type RejectedMetrics struct {
	Server, Reason string
	Count          uint64
}

// WriteMetrics writes m in the Prometheus text exposition format 0.0.4. Every
// family has its HELP and TYPE lines even without samples, and samples are sorted
// by their labels, so the output is stable for equal input.
func WriteMetrics(w io.Writer, m Metrics) error {
	version, gover := m.Version, m.GoVersion
	if version == "" {
		version = "dev"
	}
	if gover == "" {
		gover = runtime.Version()
	}
	wfs := append([]WorkflowMetrics(nil), m.Workflows...)
	sort.Slice(wfs, func(i, j int) bool { return wfs[i].Workflow < wfs[j].Workflow })
	tools := append([]ToolCallMetrics(nil), m.ToolCalls...)
	sort.Slice(tools, func(i, j int) bool {
		if tools[i].Server != tools[j].Server {
			return tools[i].Server < tools[j].Server
		}
		return tools[i].Tool < tools[j].Tool
	})
	rej := append([]RejectedMetrics(nil), m.Rejected...)
	sort.Slice(rej, func(i, j int) bool {
		if rej[i].Server != rej[j].Server {
			return rej[i].Server < rej[j].Server
		}
		return rej[i].Reason < rej[j].Reason
	})
	agents := append([]AgentMetrics(nil), m.Agents...)
	sort.Slice(agents, func(i, j int) bool { return agents[i].Agent < agents[j].Agent })
	pipelines := append([]PipelineMetrics(nil), m.Pipelines...)
	sort.Slice(pipelines, func(i, j int) bool { return pipelines[i].Pipeline < pipelines[j].Pipeline })

	b := bufio.NewWriter(w)
	family := func(name, typ, help string) {
		b.WriteString("# HELP " + name + " " + escapeHelp(help) + "\n# TYPE " + name + " " + typ + "\n")
	}
	sample := func(name string, labels []string, value string) {
		b.WriteString(name)
		if len(labels) > 0 {
			b.WriteByte('{')
			for i := 0; i+1 < len(labels); i += 2 {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(labels[i] + `="` + escapeLabelValue(labels[i+1]) + `"`)
			}
			b.WriteByte('}')
		}
		b.WriteString(" " + value + "\n")
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }

	family("helix_build_info", "gauge", "Helix build information; the value is always 1.")
	sample("helix_build_info", []string{"version", version, "goversion", gover}, "1")

	family("helix_exchanges_total", "counter", "Exchanges run through a workflow's pipeline.")
	for _, wf := range wfs {
		sample("helix_exchanges_total", []string{"workflow", wf.Workflow}, u(wf.Exchanges))
	}
	family("helix_exchanges_failed_total", "counter", "Exchanges whose workflow pipeline ended with an error.")
	for _, wf := range wfs {
		sample("helix_exchanges_failed_total", []string{"workflow", wf.Workflow}, u(wf.Failed))
	}
	family("helix_exchanges_inflight", "gauge", "Exchanges running a workflow pipeline now.")
	sample("helix_exchanges_inflight", nil, strconv.FormatInt(m.InFlight, 10))
	family("helix_exchange_duration_seconds", "summary", "Time exchanges spent in a workflow's pipeline.")
	for _, wf := range wfs {
		lbl := []string{"workflow", wf.Workflow}
		sample("helix_exchange_duration_seconds_sum", lbl, strconv.FormatFloat(wf.DurationSeconds, 'g', -1, 64))
		sample("helix_exchange_duration_seconds_count", lbl, u(wf.Exchanges))
	}

	family("helix_mcp_tool_calls_total", "counter", "MCP tools/call requests that reached the tool.")
	for _, t := range tools {
		sample("helix_mcp_tool_calls_total", []string{"server", t.Server, "tool", t.Tool}, u(t.Calls))
	}
	family("helix_mcp_tool_errors_total", "counter", "MCP tool calls answered with an isError result.")
	for _, t := range tools {
		sample("helix_mcp_tool_errors_total", []string{"server", t.Server, "tool", t.Tool}, u(t.Errors))
	}
	family("helix_mcp_rejected_requests_total", "counter", "MCP requests rejected by a server's security settings.")
	for _, r := range rej {
		sample("helix_mcp_rejected_requests_total", []string{"server", r.Server, "reason", r.Reason}, u(r.Count))
	}

	for _, f := range []struct {
		name, help string
		value      func(AgentMetrics) uint64
	}{
		{"helix_agent_runs_total", "Agent runs (one per message answered or failed).", func(a AgentMetrics) uint64 { return a.Runs }},
		{"helix_agent_errors_total", "Agent runs that failed.", func(a AgentMetrics) uint64 { return a.Errors }},
		{"helix_agent_iterations_total", "Model turns of agent runs.", func(a AgentMetrics) uint64 { return a.Iterations }},
		{"helix_agent_tool_calls_total", "Tool calls agents made.", func(a AgentMetrics) uint64 { return a.ToolCalls }},
		{"helix_agent_input_tokens_total", "Input tokens agent runs cost, as the providers counted them.", func(a AgentMetrics) uint64 { return a.InputTokens }},
		{"helix_agent_output_tokens_total", "Output tokens agent runs cost, as the providers counted them.", func(a AgentMetrics) uint64 { return a.OutputTokens }},
	} {
		family(f.name, "counter", f.help)
		for _, a := range agents {
			sample(f.name, []string{"agent", a.Agent}, u(f.value(a)))
		}
	}

	for _, f := range []struct {
		name, typ, help string
		value           func(PipelineMetrics) string
	}{
		{"helix_rag_documents_ingested_total", "counter", "Documents a pipeline chunked, embedded and stored (new or changed).", func(p PipelineMetrics) string { return u(p.DocumentsIngested) }},
		{"helix_rag_ingest_errors_total", "counter", "Documents a pipeline failed to ingest.", func(p PipelineMetrics) string { return u(p.IngestErrors) }},
		{"helix_rag_chunks", "gauge", "Chunks in a pipeline's store.", func(p PipelineMetrics) string { return strconv.FormatInt(p.Chunks, 10) }},
		{"helix_rag_queries_total", "counter", "Queries a pipeline answered or failed.", func(p PipelineMetrics) string { return u(p.Queries) }},
		{"helix_rag_query_errors_total", "counter", "Queries a pipeline failed.", func(p PipelineMetrics) string { return u(p.QueryErrors) }},
	} {
		family(f.name, f.typ, f.help)
		for _, p := range pipelines {
			sample(f.name, []string{"pipeline", p.Pipeline}, f.value(p))
		}
	}
	if c := m.Cluster; c != nil { // only with helix.cluster.leader
		leader := "0"
		if c.Leader {
			leader = "1"
		}
		family("helix_cluster_leader", "gauge", "1 while this replica is the leader of its cluster (and runs the singleton triggers), else 0.")
		sample("helix_cluster_leader", []string{"cluster", c.Cluster}, leader)
		family("helix_cluster_leader_terms_total", "counter", "Terms of leadership this replica began.")
		sample("helix_cluster_leader_terms_total", []string{"cluster", c.Cluster}, u(c.Terms))
	}
	return b.Flush()
}

// labelEscaper escapes a label value as the exposition format requires:
// backslash, double quote and line feed.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabelValue(s string) string { return labelEscaper.Replace(s) }

// helpEscaper escapes HELP text: only backslash and line feed.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

func (s *Server) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	var m Metrics
	if s.opts.Metrics != nil {
		m = s.opts.Metrics()
	}
	w.Header().Set("Content-Type", MetricsContentType)
	w.Header().Set("Cache-Control", "no-store")
	if err := WriteMetrics(w, m); err != nil {
		s.log.Debug("writing metrics failed", "error", err)
	}
}
