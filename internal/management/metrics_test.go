package management

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs /metrics from h with the given Accept header ("" for none) and
// returns the response and its (decompressed) body.
func scrape(t *testing.T, h http.Handler, accept string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, MetricsPath, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// parse reads the Prometheus text format strictly: a malformed line, a sample of
// the wrong type for its family or a repeated TYPE fails the test.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parsing the exposition: %v\n%s", err, text)
	}
	return fams
}

// canonical re-encodes the families named with prefix in one order (families by
// name, samples by labels, labels by name), so two expositions compare as text:
// names, HELP, TYPE, label names and values, and values must all match.
func canonical(t *testing.T, fams map[string]*dto.MetricFamily, prefix string) string {
	t.Helper()
	var names []string
	for n := range fams {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		mf := fams[n]
		for _, m := range mf.Metric {
			sort.Slice(m.Label, func(i, j int) bool { return m.Label[i].GetName() < m.Label[j].GetName() })
		}
		key := func(m *dto.Metric) string {
			var s []string
			for _, l := range m.Label {
				s = append(s, l.GetName()+"="+l.GetValue())
			}
			return strings.Join(s, ",")
		}
		sort.Slice(mf.Metric, func(i, j int) bool { return key(mf.Metric[i]) < key(mf.Metric[j]) })
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	return b.String()
}

func TestMetricsExposition(t *testing.T) {
	m := Metrics{
		Version: "1.2.3", GoVersion: "go1.26.8", InFlight: 2,
		Workflows: []WorkflowMetrics{
			{Workflow: "zeta", Exchanges: 3, Failed: 1, DurationSeconds: 0.25},
			{Workflow: `we"ird\path` + "\nx", Exchanges: 1, DurationSeconds: 1.5e-06},
		},
		ToolCalls: []ToolCallMetrics{
			{Server: "s2", Tool: "a", Calls: 1},
			{Server: "s1", Tool: "b", Calls: 4, Errors: 2},
			{Server: "s1", Tool: "a", Calls: 5},
		},
		Rejected:             []RejectedMetrics{{Server: "s1", Reason: "rate limit exceeded", Count: 7}, {Server: "s1", Reason: "invalid api key", Count: 1}},
		RateLimitStoreErrors: []RateLimitStoreMetrics{{Server: "s1", Errors: 3}},
		Admission: []AdmissionMetrics{{Server: "s1", Admitted: 10, Queued: 4, Refused: 2, QueueWaitSeconds: 0.125, Running: 3, Waiting: 1, Limit: 8,
			RefusedAtDoor: 1}},
		Agents: []AgentMetrics{
			{Agent: "zeta", Runs: 3, Errors: 1, Iterations: 7, ToolCalls: 4, InputTokens: 120, OutputTokens: 30},
			{Agent: "alpha", Runs: 1},
		},
		Pipelines: []PipelineMetrics{
			{Pipeline: "z", DocumentsIngested: 3, Chunks: 12, Queries: 2},
			{Pipeline: "a", IngestErrors: 1, QueryErrors: 1},
		},
		Cluster: &ClusterMetrics{Cluster: "orders", Leader: true, Terms: 2},
	}
	// The contract of docs/management.md: every name, type, help text and label set.
	const want = `# HELP helix_build_info Helix build information; the value is always 1.
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
# HELP helix_mcp_rate_limit_store_errors_total MCP requests whose rate limit the shared store (rate_limit_store) did not decide, so the fallback did.
# TYPE helix_mcp_rate_limit_store_errors_total counter
helix_mcp_rate_limit_store_errors_total{server="s1"} 3
# HELP helix_mcp_admission_admitted_total MCP requests admission control let run (at once or after queueing).
# TYPE helix_mcp_admission_admitted_total counter
helix_mcp_admission_admitted_total{server="s1"} 10
# HELP helix_mcp_admission_queued_total MCP requests that waited for a slot (then admitted or refused).
# TYPE helix_mcp_admission_queued_total counter
helix_mcp_admission_queued_total{server="s1"} 4
# HELP helix_mcp_admission_refused_total MCP requests admission control refused (503, server busy) before any work.
# TYPE helix_mcp_admission_refused_total counter
helix_mcp_admission_refused_total{server="s1"} 2
# HELP helix_mcp_admission_queue_wait_seconds_total Time MCP requests spent waiting for a slot.
# TYPE helix_mcp_admission_queue_wait_seconds_total counter
helix_mcp_admission_queue_wait_seconds_total{server="s1"} 0.125
# HELP helix_mcp_admission_running MCP requests holding an admission slot now.
# TYPE helix_mcp_admission_running gauge
helix_mcp_admission_running{server="s1"} 3
# HELP helix_mcp_admission_waiting MCP requests waiting for an admission slot now.
# TYPE helix_mcp_admission_waiting gauge
helix_mcp_admission_waiting{server="s1"} 1
# HELP helix_mcp_admission_limit The admission limit (max_running) of an MCP server.
# TYPE helix_mcp_admission_limit gauge
helix_mcp_admission_limit{server="s1"} 8
# HELP helix_mcp_admission_refused_at_door_total MCP calls refused before their body was parsed because every slot was taken and the queue full (also in refused_total).
# TYPE helix_mcp_admission_refused_at_door_total counter
helix_mcp_admission_refused_at_door_total{server="s1"} 1
# HELP helix_agent_runs_total Agent runs (one per message answered or failed).
# TYPE helix_agent_runs_total counter
helix_agent_runs_total{agent="alpha"} 1
helix_agent_runs_total{agent="zeta"} 3
# HELP helix_agent_errors_total Agent runs that failed.
# TYPE helix_agent_errors_total counter
helix_agent_errors_total{agent="alpha"} 0
helix_agent_errors_total{agent="zeta"} 1
# HELP helix_agent_iterations_total Model turns of agent runs.
# TYPE helix_agent_iterations_total counter
helix_agent_iterations_total{agent="alpha"} 0
helix_agent_iterations_total{agent="zeta"} 7
# HELP helix_agent_tool_calls_total Tool calls agents made.
# TYPE helix_agent_tool_calls_total counter
helix_agent_tool_calls_total{agent="alpha"} 0
helix_agent_tool_calls_total{agent="zeta"} 4
# HELP helix_agent_input_tokens_total Input tokens agent runs cost, as the providers counted them.
# TYPE helix_agent_input_tokens_total counter
helix_agent_input_tokens_total{agent="alpha"} 0
helix_agent_input_tokens_total{agent="zeta"} 120
# HELP helix_agent_output_tokens_total Output tokens agent runs cost, as the providers counted them.
# TYPE helix_agent_output_tokens_total counter
helix_agent_output_tokens_total{agent="alpha"} 0
helix_agent_output_tokens_total{agent="zeta"} 30
# HELP helix_rag_documents_ingested_total Documents a pipeline chunked, embedded and stored (new or changed).
# TYPE helix_rag_documents_ingested_total counter
helix_rag_documents_ingested_total{pipeline="a"} 0
helix_rag_documents_ingested_total{pipeline="z"} 3
# HELP helix_rag_ingest_errors_total Documents a pipeline failed to ingest.
# TYPE helix_rag_ingest_errors_total counter
helix_rag_ingest_errors_total{pipeline="a"} 1
helix_rag_ingest_errors_total{pipeline="z"} 0
# HELP helix_rag_chunks Chunks in a pipeline's store.
# TYPE helix_rag_chunks gauge
helix_rag_chunks{pipeline="a"} 0
helix_rag_chunks{pipeline="z"} 12
# HELP helix_rag_queries_total Queries a pipeline answered or failed.
# TYPE helix_rag_queries_total counter
helix_rag_queries_total{pipeline="a"} 0
helix_rag_queries_total{pipeline="z"} 2
# HELP helix_rag_query_errors_total Queries a pipeline failed.
# TYPE helix_rag_query_errors_total counter
helix_rag_query_errors_total{pipeline="a"} 1
helix_rag_query_errors_total{pipeline="z"} 0
# HELP helix_cluster_leader 1 while this replica is the leader of its cluster (and runs the singleton triggers), else 0.
# TYPE helix_cluster_leader gauge
helix_cluster_leader{cluster="orders"} 1
# HELP helix_cluster_leader_terms_total Terms of leadership this replica began.
# TYPE helix_cluster_leader_terms_total counter
helix_cluster_leader_terms_total{cluster="orders"} 2
`
	s := New(Options{Metrics: func() Metrics { return m }})
	resp, body := scrape(t, s.Handler(), "")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != MetricsContentType {
		t.Fatalf("metrics: %d %q", resp.StatusCode, ct)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	got, exp := canonical(t, parse(t, body), "helix_"), canonical(t, parse(t, want), "helix_")
	if got != exp {
		t.Errorf("helix families:\n%s\nwant:\n%s", got, exp)
	}
	// The summary has no quantiles: the engine keeps a count and a sum.
	if strings.Contains(body, "helix_exchange_duration_seconds{") {
		t.Errorf("the duration summary has quantiles:\n%s", body)
	}

	// Not leading: the gauge reads 0.
	m.Cluster = &ClusterMetrics{Cluster: "orders", Terms: 2}
	_, body = scrape(t, s.Handler(), "")
	if !strings.Contains(body, "\nhelix_cluster_leader{cluster=\"orders\"} 0\n") {
		t.Errorf("follower:\n%s", body)
	}
}

// The canonical comparison above fails on a changed type or label set: a check
// that it would (a test that cannot fail is no test).
func TestCanonicalCatchesTypeAndLabels(t *testing.T) {
	base := "# HELP x_total h\n# TYPE x_total counter\nx_total{a=\"1\"} 1\n"
	for _, other := range []string{
		"# HELP x_total h\n# TYPE x_total gauge\nx_total{a=\"1\"} 1\n",
		"# HELP x_total h\n# TYPE x_total counter\nx_total{b=\"1\"} 1\n",
		"# HELP x_total h\n# TYPE x_total counter\nx_total{a=\"1\",b=\"2\"} 1\n",
		"# HELP x_total h\n# TYPE x_total untyped\nx_total{a=\"1\"} 1\n",
	} {
		if canonical(t, parse(t, base), "x") == canonical(t, parse(t, other), "x") {
			t.Errorf("%q compares equal to %q", other, base)
		}
	}
}

// The Go runtime and process collectors are served beside Helix's families.
func TestMetricsRuntimeAndProcess(t *testing.T) {
	_, body := scrape(t, New(Options{}).Handler(), "")
	fams := parse(t, body)
	want := map[string]dto.MetricType{
		"go_goroutines":                 dto.MetricType_GAUGE,
		"go_threads":                    dto.MetricType_GAUGE,
		"go_gc_duration_seconds":        dto.MetricType_SUMMARY,
		"go_memstats_alloc_bytes":       dto.MetricType_GAUGE,
		"go_memstats_heap_inuse_bytes":  dto.MetricType_GAUGE,
		"go_info":                       dto.MetricType_GAUGE,
		"helix_build_info":              dto.MetricType_GAUGE,
		"helix_exchanges_inflight":      dto.MetricType_GAUGE,
		"process_cpu_seconds_total":     dto.MetricType_COUNTER,
		"process_resident_memory_bytes": dto.MetricType_GAUGE,
		"process_open_fds":              dto.MetricType_GAUGE,
		"process_max_fds":               dto.MetricType_GAUGE,
		"process_start_time_seconds":    dto.MetricType_GAUGE,
	}
	for name, typ := range want {
		if runtime.GOOS != "linux" && strings.HasPrefix(name, "process_") {
			continue // the process collector reads /proc
		}
		mf, ok := fams[name]
		if !ok {
			t.Errorf("no %s", name)
			continue
		}
		if mf.GetType() != typ {
			t.Errorf("%s is a %v, want %v", name, mf.GetType(), typ)
		}
	}
	if g := fams["go_goroutines"]; g != nil && g.Metric[0].GetGauge().GetValue() < 1 {
		t.Errorf("go_goroutines = %v", g.Metric[0].GetGauge().GetValue())
	}
	if f := fams["process_open_fds"]; f != nil && f.Metric[0].GetGauge().GetValue() < 3 {
		t.Errorf("process_open_fds = %v", f.Metric[0].GetGauge().GetValue())
	}
	// Without a Metrics func: build info and in-flight only; a family without
	// samples is not exposed.
	if !strings.Contains(body, `helix_build_info{goversion="`+runtime.Version()+`",version="dev"} 1`) ||
		!strings.Contains(body, "\nhelix_exchanges_inflight 0\n") {
		t.Errorf("default helix metrics:\n%s", body)
	}
	if strings.Contains(body, "helix_mcp_") || strings.Contains(body, "helix_exchanges_total") {
		t.Errorf("families without samples are exposed:\n%s", body)
	}
}

// Content negotiation: OpenMetrics for a scraper that asks for it (Prometheus
// does), the text format otherwise, gzip when accepted.
func TestMetricsNegotiation(t *testing.T) {
	s := New(Options{Metrics: func() Metrics {
		return Metrics{Version: "1", Workflows: []WorkflowMetrics{{Workflow: "w", Exchanges: 4, Failed: 1, DurationSeconds: 2}}}
	}})
	resp, body := scrape(t, s.Handler(), "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Fatalf("Content-Type %q", ct)
	}
	for _, want := range []string{
		"# TYPE helix_exchanges counter\n", "\nhelix_exchanges_total{workflow=\"w\"} 4.0\n",
		"# TYPE helix_exchange_duration_seconds summary\n", "\nhelix_exchange_duration_seconds_count{workflow=\"w\"} 4\n",
		"# TYPE helix_build_info gauge\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("OpenMetrics lacks %q:\n%s", want, body)
		}
	}
	if !strings.HasSuffix(body, "# EOF\n") {
		t.Error("OpenMetrics without # EOF")
	}

	// A protobuf scraper gets protobuf.
	resp, _ = scrape(t, s.Handler(), "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/vnd.google.protobuf") {
		t.Errorf("protobuf Content-Type %q", ct)
	}

	req := httptest.NewRequest(http.MethodGet, MetricsPath, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q", rec.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if fams := parse(t, string(plain)); fams["helix_exchanges_total"].GetMetric()[0].GetCounter().GetValue() != 4 {
		t.Errorf("gzip body:\n%s", plain)
	}
}

// Each server has a registry of its own: what one registers is not served by
// another, and a name Helix serves cannot be registered again.
func TestMetricsRegister(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	leader := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "helix_test_leader", Help: "A package's own gauge."}, []string{"cluster"})
	if err := a.Register(leader); err != nil {
		t.Fatal(err)
	}
	leader.WithLabelValues("c1").Set(1)
	_, body := scrape(t, a.Handler(), "")
	if !strings.Contains(body, "# TYPE helix_test_leader gauge\nhelix_test_leader{cluster=\"c1\"} 1\n") {
		t.Errorf("registered gauge not served:\n%s", body)
	}
	if _, body := scrape(t, b.Handler(), ""); strings.Contains(body, "helix_test_leader") {
		t.Error("another server serves the gauge")
	}
	if err := a.Register(leader); err == nil {
		t.Error("registering twice succeeded")
	}
	clash := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "helix_exchanges_total", Help: "x"}, []string{"workflow"})
	if err := b.Register(clash); err == nil {
		t.Error("registering helix_exchanges_total again succeeded")
	}
	clash2 := prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_goroutines", Help: "x"})
	if err := b.Register(clash2); err == nil {
		t.Error("registering go_goroutines again succeeded")
	}
}

// failingCollector reports an error for its one metric.
type failingCollector struct{ desc *prometheus.Desc }

func (c failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.desc, errors.New("backend down"))
}

// A collector that fails does not take the other metrics down.
func TestMetricsCollectorError(t *testing.T) {
	s := New(Options{Metrics: func() Metrics { return Metrics{InFlight: 3} }})
	if err := s.Register(failingCollector{prometheus.NewDesc("helix_test_broken", "x", nil, nil)}); err != nil {
		t.Fatal(err)
	}
	resp, body := scrape(t, s.Handler(), "")
	if resp.StatusCode != 200 || !strings.Contains(body, "\nhelix_exchanges_inflight 3\n") || strings.Contains(body, "helix_test_broken") {
		t.Errorf("%d:\n%s", resp.StatusCode, body)
	}
}

// Scrapes may run concurrently (several Prometheus servers).
func TestMetricsConcurrentScrapes(t *testing.T) {
	var n int
	var mu sync.Mutex
	s := New(Options{Metrics: func() Metrics {
		mu.Lock()
		defer mu.Unlock()
		n++
		return Metrics{Workflows: []WorkflowMetrics{{Workflow: fmt.Sprint("w", n%3), Exchanges: uint64(n)}}}
	}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := scrape(t, s.Handler(), "")
			if resp.StatusCode != 200 || !strings.Contains(body, "helix_exchanges_total{workflow=\"w") {
				t.Errorf("%d:\n%s", resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
}

func TestMetricsRoute(t *testing.T) {
	s := startServer(t, Options{Metrics: func() Metrics {
		return Metrics{Version: "9", InFlight: 4}
	}})
	resp, body := get(t, "http://"+s.Addr()+MetricsPath)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != MetricsContentType {
		t.Fatalf("metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	fams := parse(t, body)
	if bi := fams["helix_build_info"]; bi == nil || len(bi.Metric) != 1 || bi.Metric[0].GetGauge().GetValue() != 1 {
		t.Errorf("helix_build_info: %v", bi)
	} else {
		labels := map[string]string{}
		for _, l := range bi.Metric[0].Label {
			labels[l.GetName()] = l.GetValue()
		}
		if len(labels) != 2 || labels["version"] != "9" || labels["goversion"] != runtime.Version() {
			t.Errorf("helix_build_info labels %v", labels)
		}
	}
	if in := fams["helix_exchanges_inflight"]; in == nil || in.GetType() != dto.MetricType_GAUGE || in.Metric[0].GetGauge().GetValue() != 4 {
		t.Errorf("helix_exchanges_inflight: %v", in)
	}
}
