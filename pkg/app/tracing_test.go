package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// Trace context a caller sends: its trace and span ids.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	callerTP    = "00-" + callerTrace + "-" + callerSpan + "-01"
	headerTrace = "0af7651916cd43dd8448eb211c80319c"
	headerSpan  = "b7ad6b7169203331"
	headerTP    = "00-" + headerTrace + "-" + headerSpan + "-01"
)

// tracedApp builds yaml with every span going to an in-memory exporter, starts it
// and stops it at cleanup.
func tracedApp(t *testing.T, yaml string) (*app.App, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	cfg, err := config.LoadBytes("helix.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	opts := quiet
	opts.SpanExporter = exp
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return startBuilt(t, a), exp
}

// spanNamed waits for the ended span called name (generously: the machine may be
// loaded) and returns it; with several, the first to end.
func spanNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(testtools.StartupBound)
	for {
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				return s
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range exp.GetSpans() {
				names = append(names, s.Name)
			}
			t.Fatalf("no span %q; spans: %v", name, names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childrenOf returns the ended spans whose parent is p, in the order they started.
func childrenOf(exp *tracetest.InMemoryExporter, p tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Parent.SpanID() == p.SpanContext.SpanID() && s.Parent.TraceID() == p.SpanContext.TraceID() {
			out = append(out, s)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].StartTime.Before(out[j-1].StartTime); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func wantParent(t *testing.T, child tracetest.SpanStub, parent trace.SpanContext) {
	t.Helper()
	if child.Parent.TraceID() != parent.TraceID() || child.Parent.SpanID() != parent.SpanID() {
		t.Errorf("span %q: parent %s/%s, want %s/%s", child.Name, child.Parent.TraceID(), child.Parent.SpanID(),
			parent.TraceID(), parent.SpanID())
	}
}

// recorder is a downstream that keeps the trace context of each request.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) add(tp string) {
	r.mu.Lock()
	r.got = append(r.got, tp)
	r.mu.Unlock()
}

func (r *recorder) last(t *testing.T) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		t.Fatal("the downstream got no request")
	}
	return r.got[len(r.got)-1]
}

// downstreams starts an HTTP server and a go-sdk MCP server (tool echo) that record
// the traceparent header and params._meta.traceparent they receive.
func downstreams(t *testing.T) (httpURL, mcpAddr string, httpSeen, metaSeen *recorder) {
	httpSeen, metaSeen = &recorder{}, &recorder{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpSeen.add(r.Header.Get("traceparent"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"stock": 3}`))
	}))
	t.Cleanup(hs.Close)
	child := sdk.NewServer(&sdk.Implementation{Name: "child", Version: "1"}, nil)
	sdk.AddTool(child, &sdk.Tool{Name: "echo", Description: "echoes"},
		func(_ context.Context, req *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
			tp, _ := req.Params.GetMeta()["traceparent"].(string)
			metaSeen.add(tp)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echoed"}}}, nil, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return child }, nil))
	ms := httptest.NewServer(mux)
	t.Cleanup(ms.Close)
	return hs.URL, strings.TrimPrefix(ms.URL, "http://"), httpSeen, metaSeen
}

// spanOf returns the span id in a traceparent.
func spanOf(tp string) string {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 {
		return ""
	}
	return parts[2]
}

// An MCP tools/call into a workflow of two steps, an http:// and an mcp:// target:
// the span tree is tools/call → workflow → one span per step, the mcp:// step
// has the client's tools/call span, the caller's _meta traceparent is the root's
// parent (and wins over the traceparent header of the same POST), and both
// downstreams receive the trace context of the span that called them.
func TestTracingToolsCallSpanTree(t *testing.T) {
	t.Parallel()
	httpURL, mcpAddr, httpSeen, metaSeen := downstreams(t)
	a, exp := tracedApp(t, fmt.Sprintf(`
helix:
  name: traced-helix
  tracing:
    exporter: otlp
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: traced
workflows:
  - id: lookup
    description: "Looks up stock, then echoes"
    trigger: direct://lookup
    steps:
      - target: %s/stock
      - target: mcp://%s/mcp/echo
`, httpURL, mcpAddr))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "tracing-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: serverURL(t, a, "traced") + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{h: http.Header{"Traceparent": {headerTP}}, base: &http.Transport{}}}, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a session: the span names it
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: "lookup", Arguments: map[string]any{}}
	params.SetMeta(map[string]any{"traceparent": callerTP})
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}

	root := spanNamed(t, exp, "tools/call lookup")
	if root.SpanKind != trace.SpanKindServer || attr(root, "mcp.method.name") != "tools/call" ||
		attr(root, "gen_ai.tool.name") != "lookup" || attr(root, "mcp.session.id") == "" {
		t.Errorf("tools/call span: kind %v, attributes %v", root.SpanKind, root.Attributes)
	}
	if root.Parent.TraceID().String() != callerTrace || root.Parent.SpanID().String() != callerSpan || !root.Parent.IsRemote() {
		t.Errorf("tools/call parent %s/%s, want the caller's _meta %s/%s", root.Parent.TraceID(), root.Parent.SpanID(), callerTrace, callerSpan)
	}
	if got := root.Resource.Set(); true {
		if v, ok := got.Value("service.name"); !ok || v.AsString() != "traced-helix" {
			t.Errorf("service.name %v, want helix.name traced-helix", v)
		}
	}
	wf := spanNamed(t, exp, "workflow lookup")
	wantParent(t, wf, root.SpanContext)
	if attr(wf, "helix.workflow.id") != "lookup" || attr(wf, "helix.exchange.id") == "" {
		t.Errorf("workflow span attributes %v", wf.Attributes)
	}
	steps := childrenOf(exp, wf)
	if len(steps) != 2 {
		t.Fatalf("workflow span has %d children, want 2 steps", len(steps))
	}
	for i, s := range steps {
		if s.Name != "step target" || attr(s, "helix.step.kind") != "target" || attr(s, "helix.step.index") != fmt.Sprint(i) ||
			!strings.HasPrefix(attr(s, "helix.step.position"), "helix.yaml:") {
			t.Errorf("step %d: %s %v", i, s.Name, s.Attributes)
		}
	}
	get := spanNamed(t, exp, "POST")
	wantParent(t, get, steps[0].SpanContext)
	if get.SpanKind != trace.SpanKindClient || attr(get, "http.response.status_code") != "200" || !strings.HasSuffix(attr(get, "url.full"), "/stock") {
		t.Errorf("http:// client span: kind %v attributes %v", get.SpanKind, get.Attributes)
	}
	if got := spanOf(httpSeen.last(t)); got != get.SpanContext.SpanID().String() {
		t.Errorf("http:// downstream got span %q, want the client span's %s", got, get.SpanContext.SpanID())
	}
	call := spanNamed(t, exp, "tools/call echo")
	wantParent(t, call, steps[1].SpanContext)
	if call.SpanKind != trace.SpanKindClient {
		t.Errorf("mcp:// client span kind %v", call.SpanKind)
	}
	if got := spanOf(metaSeen.last(t)); got != call.SpanContext.SpanID().String() {
		t.Errorf("mcp:// downstream got _meta span %q, want the client span's %s", got, call.SpanContext.SpanID())
	}
	if tid := call.SpanContext.TraceID().String(); tid != callerTrace {
		t.Errorf("the trace changed on the way: %s", tid)
	}

	// Without _meta the call takes Helix's fast path; the POST's traceparent header
	// is then the parent.
	exp.Reset()
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lookup", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("tools/call without _meta: %v %+v", err, res)
	}
	root = spanNamed(t, exp, "tools/call lookup")
	if root.Parent.TraceID().String() != headerTrace || root.Parent.SpanID().String() != headerSpan {
		t.Errorf("tools/call parent %s/%s, want the header's %s/%s", root.Parent.TraceID(), root.Parent.SpanID(), headerTrace, headerSpan)
	}
}

// An http-server:// trigger continues the caller's trace from the traceparent
// header; a failing step marks its span and the exchange's span as errors, with
// an exception event.
func TestTracingHTTPTriggerAndFailingStep(t *testing.T) {
	t.Parallel()
	a, exp := tracedApp(t, `
helix:
  tracing:
    exporter: otlp
    service_name: orders
workflows:
  - id: orders
    trigger: http-server://127.0.0.1:0/orders
    steps:
      - set-header: {name: X-Seen, constant: "yes"}
      - transform:
          starlang: |
            fail("no stock for " ++ payload["sku"])
`)
	req, _ := http.NewRequest(http.MethodPost, httpBase(t, a, "127.0.0.1:0")+"/orders", strings.NewReader(`{"sku":"A1"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", headerTP)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("status %d, want a failure", resp.StatusCode)
	}
	wf := spanNamed(t, exp, "workflow orders")
	if wf.Parent.TraceID().String() != headerTrace || wf.Parent.SpanID().String() != headerSpan || wf.SpanKind != trace.SpanKindServer {
		t.Errorf("workflow span: parent %s/%s kind %v, want the header's %s/%s, server", wf.Parent.TraceID(), wf.Parent.SpanID(), wf.SpanKind, headerTrace, headerSpan)
	}
	if attr(wf, "http.request.method") != "POST" || attr(wf, "url.path") != "/orders" {
		t.Errorf("workflow span attributes %v", wf.Attributes)
	}
	if v, _ := wf.Resource.Set().Value("service.name"); v.AsString() != "orders" {
		t.Errorf("service.name %q, want service_name orders", v.AsString())
	}
	if wf.Status.Code != codes.Error || !strings.Contains(wf.Status.Description, "no stock for A1") {
		t.Errorf("workflow span status %+v", wf.Status)
	}
	steps := childrenOf(exp, wf)
	if len(steps) != 2 {
		t.Fatalf("%d step spans, want 2", len(steps))
	}
	if steps[0].Name != "step set-header" || steps[0].Status.Code == codes.Error {
		t.Errorf("first step: %s %+v", steps[0].Name, steps[0].Status)
	}
	failed := steps[1]
	if failed.Name != "step transform" || failed.Status.Code != codes.Error {
		t.Errorf("failing step: %s %+v", failed.Name, failed.Status)
	}
	if len(failed.Events) == 0 || failed.Events[0].Name != "exception" {
		t.Errorf("failing step events %v, want an exception", failed.Events)
	}
}

// A record produced by one workflow carries the trace to the workflow consuming
// it: the consumer's exchange span is a child of the producing step's span.
func TestTracingKafkaCarriesTheTrace(t *testing.T) {
	t.Parallel()
	brokers := strings.Join(kafkatest.Brokers(t), ",")
	topic := kafkatest.Topic(t, strings.Split(brokers, ","), "traced", 1)
	a, exp := tracedApp(t, fmt.Sprintf(`
helix:
  tracing: {exporter: otlp}
  kafka: {brokers: %q}
workflows:
  - id: send
    trigger: direct://send
    steps:
      - target: kafka://%s
  - id: receive
    trigger: kafka://%s?groupId=traced&sessionTimeout=6s
    steps:
      - log: "got ${body}"
`, brokers, topic, topic))
	ex := exchange.NewWithBody(exchange.InOnly, "hello")
	// An exchange header as an HTTP caller would have left it: replaced, not doubled.
	ex.In().SetHeader("Traceparent", headerTP)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Context().Run(ctx, "send", ex); err != nil {
		t.Fatal(err)
	}
	send := spanNamed(t, exp, "workflow send")
	steps := childrenOf(exp, send)
	if len(steps) != 1 {
		t.Fatalf("%d step spans under send", len(steps))
	}
	recv := spanNamed(t, exp, "workflow receive")
	wantParent(t, recv, steps[0].SpanContext)
	if recv.SpanKind != trace.SpanKindConsumer || attr(recv, "messaging.system") != "kafka" || attr(recv, "messaging.destination.name") != topic {
		t.Errorf("consumer span: kind %v attributes %v", recv.SpanKind, recv.Attributes)
	}
}

// An agent's model call is a "chat <model>" span with the GenAI attributes and
// token usage, and its HTTP request to the provider carries that span's
// traceparent.
func TestTracingAgentModelCall(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAI(t, agenttest.Reply{Text: "Fine", InputTokens: 12, OutputTokens: 5})
	a, exp := tracedApp(t, agentYAML(`
helix:
  tracing: {exporter: otlp}
agents:
  - id: assistant
    type: react
    trigger: direct://assistant
    model:
      provider: openai
      model: gpt-4o
      api_key: test-key
      base_url: FAKE_URL
    system_prompt: "Be brief."
`, fake))
	ex := exchange.NewWithBody(exchange.InOut, "How are you?")
	if err := a.Context().Run(callCtx(t), "assistant", ex); err != nil {
		t.Fatal(err)
	}
	chat := spanNamed(t, exp, "chat gpt-4o")
	if chat.SpanKind != trace.SpanKindClient || attr(chat, "gen_ai.provider.name") != "openai" || attr(chat, "gen_ai.request.model") != "gpt-4o" ||
		attr(chat, "gen_ai.usage.input_tokens") != "12" || attr(chat, "gen_ai.usage.output_tokens") != "5" {
		t.Errorf("chat span: kind %v attributes %v", chat.SpanKind, chat.Attributes)
	}
	if chat.SpanContext.TraceID() != spanNamed(t, exp, "agent assistant").SpanContext.TraceID() {
		t.Error("the model call is not in the agent's trace")
	}
	hs := fake.Headers()
	if len(hs) != 1 {
		t.Fatalf("%d model requests", len(hs))
	}
	if got := spanOf(hs[0].Get("traceparent")); got != chat.SpanContext.SpanID().String() {
		t.Errorf("model request traceparent span %q, want the chat span's %s", got, chat.SpanContext.SpanID())
	}
}

// With tracing off (the default) nothing is traced and an http:// target sends no
// traceparent of Helix's own.
func TestTracingOffSendsNoTraceparent(t *testing.T) {
	t.Parallel()
	httpURL, _, httpSeen, _ := downstreams(t)
	// The console (on by default on loopback) adds tracers of its own.
	a, err := buildYAML(t, fmt.Sprintf(`
helix:
  console: {enabled: false}
workflows:
  - id: plain
    trigger: direct://plain
    steps:
      - target: %s/x
`, httpURL))
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	if a.Context().Tracer() != nil {
		t.Fatal("tracing is on without helix.tracing")
	}
	if err := a.Context().Run(callCtx(t), "plain", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
		t.Fatal(err)
	}
	if got := httpSeen.last(t); got != "" {
		t.Errorf("traceparent %q sent with tracing off", got)
	}
}

// Every YAML example of docs/tracing.md loads and builds.
func TestTracingDocExamplesBuild(t *testing.T) {
	t.Setenv("OTLP_API_KEY", "k")
	t.Setenv("OTLP_TOKEN", "t")
	raw, err := os.ReadFile("../../docs/tracing.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(raw), "```yaml\n")[1:]
	if len(blocks) < 5 {
		t.Fatalf("%d YAML examples in docs/tracing.md", len(blocks))
	}
	for i, b := range blocks {
		src := b[:strings.Index(b, "```")]
		cfg, err := config.LoadBytes("tracing.md", []byte(src))
		if err == nil {
			err = app.Validate(cfg)
		}
		if err != nil {
			t.Errorf("example %d:\n%s\n%v", i+1, src, err)
		} else if !cfg.Helix.Tracing.On() {
			t.Errorf("example %d does not switch tracing on", i+1)
		}
	}
}

// Two applications in one process keep their spans apart: each has its own
// provider, even when one calls the other over HTTP.
func TestTracingTwoAppsKeepTheirSpans(t *testing.T) {
	t.Parallel()
	back, backSpans := tracedApp(t, `
helix:
  name: back
  tracing: {exporter: otlp}
workflows:
  - id: answer
    trigger: http-server://127.0.0.1:0/answer
    steps:
      - set-body: {constant: "42"}
`)
	front, frontSpans := tracedApp(t, fmt.Sprintf(`
helix:
  name: front
  tracing: {exporter: otlp}
workflows:
  - id: ask
    trigger: direct://ask
    steps:
      - target: %s/answer
`, httpBase(t, back, "127.0.0.1:0")))
	if err := front.Context().Run(callCtx(t), "ask", exchange.NewWithBody(exchange.InOut, "q")); err != nil {
		t.Fatal(err)
	}
	answer := spanNamed(t, backSpans, "workflow answer")
	ask := spanNamed(t, frontSpans, "workflow ask")
	for _, s := range frontSpans.GetSpans() {
		if s.Name == "workflow answer" {
			t.Error("the front app recorded the back app's span")
		}
	}
	for _, s := range backSpans.GetSpans() {
		if s.Name == "workflow ask" || strings.HasPrefix(s.Name, "step target") {
			t.Errorf("the back app recorded the front app's span %s", s.Name)
		}
	}
	if answer.SpanContext.TraceID() != ask.SpanContext.TraceID() {
		t.Error("the HTTP call did not carry the trace from one app to the other")
	}
	if v, _ := answer.Resource.Set().Value("service.name"); v.AsString() != "back" {
		t.Errorf("back's service.name %q", v.AsString())
	}
}

// With the OTLP exporter configured, the spans of an exchange reach the collector
// by the time Stop returns: Stop flushes the batch.
func TestTracingFlushesAtStop(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var posts []int
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			posts = append(posts, len(body))
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	a, err := buildYAML(t, fmt.Sprintf(`
helix:
  shutdown_timeout: 20s
  tracing:
    exporter: otlp
    endpoint: %s
workflows:
  - id: w
    trigger: direct://w
    steps:
      - log: "x"
`, collector.URL))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Context().Run(callCtx(t), "w", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	before := len(posts)
	mu.Unlock()
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) <= before || posts[len(posts)-1] == 0 {
		t.Fatalf("exports %v (before stop: %d): the spans were not flushed at stop", posts, before)
	}
}
