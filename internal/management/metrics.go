package management

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsPath serves the metrics: the Prometheus text format by default, or what the
// scraper's Accept header asks for among OpenMetrics and the protobuf formats.
const MetricsPath = "/metrics"

// MetricsContentType is the Content-Type of /metrics for a request without an Accept
// header (curl, a browser): the Prometheus text format 0.0.4, with metric names
// escaped to underscores should one not be a legacy name (Helix's never need it).
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// Metrics is a snapshot of the counters /metrics exposes. The application fills
// it from the engine and the MCP servers when it is scraped; this package only
// turns it into metrics, so the engine stays free of monitoring concerns and its
// per-exchange cost is that of its own atomic counters.
type Metrics struct {
	Version   string // Helix version; "dev" when empty
	GoVersion string // runtime.Version() when empty
	InFlight  int64  // exchanges running a workflow pipeline now
	Workflows []WorkflowMetrics
	ToolCalls []ToolCallMetrics
	Rejected  []RejectedMetrics
	// RateLimitStoreErrors are, per MCP server with a rate_limit_store, the
	// requests the store did not decide (their fallback did).
	RateLimitStoreErrors []RateLimitStoreMetrics
	// Admission are the admission-control counters of the MCP servers that
	// have `admission:`.
	Admission []AdmissionMetrics
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

// RateLimitStoreMetrics counts the rate-limit decisions one MCP server's shared
// store (rate_limit_store) could not make: Redis unreachable, slow or failing.
type RateLimitStoreMetrics struct {
	Server string
	Errors uint64
}

// AdmissionMetrics are the admission-control counters of one MCP server.
type AdmissionMetrics struct {
	Server                    string
	Admitted, Queued, Refused uint64
	QueueWaitSeconds          float64 // summed wait of the requests that queued
	Running, Waiting, Limit   int
	// RefusedAtDoor are the refusals (also in Refused) of calls refused before
	// their body was parsed.
	RefusedAtDoor uint64
}

// RejectedMetrics counts requests one MCP server's security rejected for a reason.
type RejectedMetrics struct {
	Server, Reason string
	Count          uint64
}

// NewRegistry returns a registry of its own, never prometheus.DefaultRegisterer (a
// process may run several Helix instances: tests start many), holding the Go
// runtime collector (go_goroutines, go_threads, go_gc_*, go_memstats_*, go_info…)
// and the process collector (process_cpu_seconds_total, process_resident_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds… where the OS
// provides them; Linux does).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// helixDesc are the descriptors of Helix's own families. Names, types, help and
// label names are the contract docs/management.md documents.
var (
	descBuildInfo = prometheus.NewDesc("helix_build_info", "Helix build information; the value is always 1.", []string{"version", "goversion"}, nil)

	descExchanges = prometheus.NewDesc("helix_exchanges_total", "Exchanges run through a workflow's pipeline.", []string{"workflow"}, nil)
	descFailed    = prometheus.NewDesc("helix_exchanges_failed_total", "Exchanges whose workflow pipeline ended with an error.", []string{"workflow"}, nil)
	descInFlight  = prometheus.NewDesc("helix_exchanges_inflight", "Exchanges running a workflow pipeline now.", nil, nil)
	descDuration  = prometheus.NewDesc("helix_exchange_duration_seconds", "Time exchanges spent in a workflow's pipeline.", []string{"workflow"}, nil)

	descToolCalls  = prometheus.NewDesc("helix_mcp_tool_calls_total", "MCP tools/call requests that reached the tool.", []string{"server", "tool"}, nil)
	descToolErrors = prometheus.NewDesc("helix_mcp_tool_errors_total", "MCP tool calls answered with an isError result.", []string{"server", "tool"}, nil)
	descRejected   = prometheus.NewDesc("helix_mcp_rejected_requests_total", "MCP requests rejected by a server's security settings.", []string{"server", "reason"}, nil)
	descStoreErrs  = prometheus.NewDesc("helix_mcp_rate_limit_store_errors_total", "MCP requests whose rate limit the shared store (rate_limit_store) did not decide, so the fallback did.", []string{"server"}, nil)

	descClusterLeader = prometheus.NewDesc("helix_cluster_leader", "1 while this replica is the leader of its cluster (and runs the singleton triggers), else 0.", []string{"cluster"}, nil)
	descClusterTerms  = prometheus.NewDesc("helix_cluster_leader_terms_total", "Terms of leadership this replica began.", []string{"cluster"}, nil)

	agentFamilies = []struct {
		desc  *prometheus.Desc
		value func(AgentMetrics) uint64
	}{
		{prometheus.NewDesc("helix_agent_runs_total", "Agent runs (one per message answered or failed).", []string{"agent"}, nil), func(a AgentMetrics) uint64 { return a.Runs }},
		{prometheus.NewDesc("helix_agent_errors_total", "Agent runs that failed.", []string{"agent"}, nil), func(a AgentMetrics) uint64 { return a.Errors }},
		{prometheus.NewDesc("helix_agent_iterations_total", "Model turns of agent runs.", []string{"agent"}, nil), func(a AgentMetrics) uint64 { return a.Iterations }},
		{prometheus.NewDesc("helix_agent_tool_calls_total", "Tool calls agents made.", []string{"agent"}, nil), func(a AgentMetrics) uint64 { return a.ToolCalls }},
		{prometheus.NewDesc("helix_agent_input_tokens_total", "Input tokens agent runs cost, as the providers counted them.", []string{"agent"}, nil), func(a AgentMetrics) uint64 { return a.InputTokens }},
		{prometheus.NewDesc("helix_agent_output_tokens_total", "Output tokens agent runs cost, as the providers counted them.", []string{"agent"}, nil), func(a AgentMetrics) uint64 { return a.OutputTokens }},
	}

	admissionFamilies = []struct {
		desc  *prometheus.Desc
		typ   prometheus.ValueType
		value func(AdmissionMetrics) float64
	}{
		{prometheus.NewDesc("helix_mcp_admission_admitted_total", "MCP requests admission control let run (at once or after queueing).", []string{"server"}, nil),
			prometheus.CounterValue, func(a AdmissionMetrics) float64 { return float64(a.Admitted) }},
		{prometheus.NewDesc("helix_mcp_admission_queued_total", "MCP requests that waited for a slot (then admitted or refused).", []string{"server"}, nil),
			prometheus.CounterValue, func(a AdmissionMetrics) float64 { return float64(a.Queued) }},
		{prometheus.NewDesc("helix_mcp_admission_refused_total", "MCP requests admission control refused (503, server busy) before any work.", []string{"server"}, nil),
			prometheus.CounterValue, func(a AdmissionMetrics) float64 { return float64(a.Refused) }},
		{prometheus.NewDesc("helix_mcp_admission_queue_wait_seconds_total", "Time MCP requests spent waiting for a slot.", []string{"server"}, nil),
			prometheus.CounterValue, func(a AdmissionMetrics) float64 { return a.QueueWaitSeconds }},
		{prometheus.NewDesc("helix_mcp_admission_running", "MCP requests holding an admission slot now.", []string{"server"}, nil),
			prometheus.GaugeValue, func(a AdmissionMetrics) float64 { return float64(a.Running) }},
		{prometheus.NewDesc("helix_mcp_admission_waiting", "MCP requests waiting for an admission slot now.", []string{"server"}, nil),
			prometheus.GaugeValue, func(a AdmissionMetrics) float64 { return float64(a.Waiting) }},
		{prometheus.NewDesc("helix_mcp_admission_limit", "The admission limit (max_running) of an MCP server.", []string{"server"}, nil),
			prometheus.GaugeValue, func(a AdmissionMetrics) float64 { return float64(a.Limit) }},
		{prometheus.NewDesc("helix_mcp_admission_refused_at_door_total", "MCP calls refused before their body was parsed because every slot was taken and the queue full (also in refused_total).", []string{"server"}, nil),
			prometheus.CounterValue, func(a AdmissionMetrics) float64 { return float64(a.RefusedAtDoor) }},
	}

	pipelineFamilies = []struct {
		desc  *prometheus.Desc
		typ   prometheus.ValueType
		value func(PipelineMetrics) float64
	}{
		{prometheus.NewDesc("helix_rag_documents_ingested_total", "Documents a pipeline chunked, embedded and stored (new or changed).", []string{"pipeline"}, nil),
			prometheus.CounterValue, func(p PipelineMetrics) float64 { return float64(p.DocumentsIngested) }},
		{prometheus.NewDesc("helix_rag_ingest_errors_total", "Documents a pipeline failed to ingest.", []string{"pipeline"}, nil),
			prometheus.CounterValue, func(p PipelineMetrics) float64 { return float64(p.IngestErrors) }},
		{prometheus.NewDesc("helix_rag_chunks", "Chunks in a pipeline's store.", []string{"pipeline"}, nil),
			prometheus.GaugeValue, func(p PipelineMetrics) float64 { return float64(p.Chunks) }},
		{prometheus.NewDesc("helix_rag_queries_total", "Queries a pipeline answered or failed.", []string{"pipeline"}, nil),
			prometheus.CounterValue, func(p PipelineMetrics) float64 { return float64(p.Queries) }},
		{prometheus.NewDesc("helix_rag_query_errors_total", "Queries a pipeline failed.", []string{"pipeline"}, nil),
			prometheus.CounterValue, func(p PipelineMetrics) float64 { return float64(p.QueryErrors) }},
	}
)

// snapshotCollector turns a Metrics snapshot, taken when the registry is gathered,
// into Helix's families. The counters stay where they are counted (the engine's
// per-workflow atomics, the MCP servers', the agents'), so the exchange path pays
// nothing for the exposition.
type snapshotCollector struct {
	snapshot func() Metrics
}

// NewCollector returns the collector of Helix's own families (helix_build_info,
// helix_exchanges_*, helix_mcp_*, helix_agent_*, helix_rag_*, helix_cluster_*), calling snapshot on
// every collection; snapshot must be safe for concurrent use. A nil snapshot
// collects helix_build_info alone. A family without samples is not exposed.
func NewCollector(snapshot func() Metrics) prometheus.Collector {
	return snapshotCollector{snapshot: snapshot}
}

// Describe sends every family's descriptor, so the registry checks names and
// label names at registration and rejects another collector reusing them.
func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBuildInfo, descExchanges, descFailed, descInFlight, descDuration,
		descToolCalls, descToolErrors, descRejected, descStoreErrs, descClusterLeader, descClusterTerms} {
		ch <- d
	}
	for _, f := range agentFamilies {
		ch <- f.desc
	}
	for _, f := range pipelineFamilies {
		ch <- f.desc
	}
	for _, f := range admissionFamilies {
		ch <- f.desc
	}
}

// Collect sends the samples of one snapshot.
func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	var m Metrics
	if c.snapshot != nil {
		m = c.snapshot()
	}
	version, gover := m.Version, m.GoVersion
	if version == "" {
		version = "dev"
	}
	if gover == "" {
		gover = runtime.Version()
	}
	ch <- prometheus.MustNewConstMetric(descBuildInfo, prometheus.GaugeValue, 1, version, gover)

	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, wf := range m.Workflows {
		counter(descExchanges, wf.Exchanges, wf.Workflow)
		counter(descFailed, wf.Failed, wf.Workflow)
		// A summary without quantiles: the engine keeps the count and the sum only.
		ch <- prometheus.MustNewConstSummary(descDuration, wf.Exchanges, wf.DurationSeconds, nil, wf.Workflow)
	}
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(m.InFlight))
	for _, t := range m.ToolCalls {
		counter(descToolCalls, t.Calls, t.Server, t.Tool)
		counter(descToolErrors, t.Errors, t.Server, t.Tool)
	}
	for _, r := range m.Rejected {
		counter(descRejected, r.Count, r.Server, r.Reason)
	}
	for _, r := range m.RateLimitStoreErrors {
		counter(descStoreErrs, r.Errors, r.Server)
	}
	for _, a := range m.Admission {
		for _, f := range admissionFamilies {
			ch <- prometheus.MustNewConstMetric(f.desc, f.typ, f.value(a), a.Server)
		}
	}
	for _, a := range m.Agents {
		for _, f := range agentFamilies {
			counter(f.desc, f.value(a), a.Agent)
		}
	}
	for _, p := range m.Pipelines {
		for _, f := range pipelineFamilies {
			ch <- prometheus.MustNewConstMetric(f.desc, f.typ, f.value(p), p.Pipeline)
		}
	}
	if cl := m.Cluster; cl != nil {
		leader := 0.0
		if cl.Leader {
			leader = 1
		}
		ch <- prometheus.MustNewConstMetric(descClusterLeader, prometheus.GaugeValue, leader, cl.Cluster)
		counter(descClusterTerms, cl.Terms, cl.Cluster)
	}
}

// Register adds c to the metrics /metrics serves: how a package exposes its own
// (a gauge, a collector reading its state at scrape time). Names already served,
// by Helix, the Go or the process collector, are refused with an error.
func (s *Server) Register(c prometheus.Collector) error {
	return s.reg.Register(c)
}

// metricsHandler serves s.reg with content negotiation (text, OpenMetrics,
// protobuf) and gzip when the scraper accepts it. A collector's error is logged
// and the rest is served.
func (s *Server) metricsHandler() http.Handler {
	h := promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{
		ErrorLog:          slogPrintln{s.log},
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// slogPrintln is promhttp's error logger on top of the server's logger. promhttp
// calls it with a message and an error: a failed collection is a warning; failing
// to write (the scraper went away) is for debugging.
type slogPrintln struct{ log *slog.Logger }

func (l slogPrintln) Println(v ...any) {
	if len(v) == 0 {
		return
	}
	msg := strings.TrimSuffix(fmt.Sprint(v[0]), ":")
	level := slog.LevelDebug
	if strings.Contains(msg, "gathering") {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, msg, "error", fmt.Sprint(v[1:]...))
}
