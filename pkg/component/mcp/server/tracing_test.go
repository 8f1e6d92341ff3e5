package server

import (
	"context"
	"io"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/tracing"
)

// On every transport a tools/call is a "tools/call <tool>" server span whose
// parent is the caller's params._meta.traceparent, with the exchange's span
// below it; the stdio server says network.transport pipe.
func TestToolsCallSpanOnEveryTransport(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(config.TracingConfig{}, tracing.Options{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	hc := newTestContext(t, &engine.Workflow{ID: "work", FromURI: "direct://work", Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error { ex.In().SetBody("done"); return nil })}})
	hc.SetTracer(tr)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	comp := startContext(t, hc,
		Options{ID: "helix", Addr: "127.0.0.1:0"},
		Options{ID: "stateless", Addr: "127.0.0.1:0", Stateless: true},
		Options{ID: "sdk", Addr: "127.0.0.1:0", HTTPTransport: HTTPTransportSDK},
		Options{ID: "sse", Transport: "sse", Addr: "127.0.0.1:0"},
		Options{ID: "stdio", Transport: "stdio", Stdin: inR, Stdout: outW},
	)
	for i, tc := range []struct {
		name, network string
		transport     func() sdk.Transport
	}{
		{"streamable helix", "tcp", func() sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "helix", "/mcp"), MaxRetries: -1, DisableStandaloneSSE: true}
		}},
		{"stateless", "tcp", func() sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "stateless", "/mcp"), MaxRetries: -1, DisableStandaloneSSE: true}
		}},
		{"streamable sdk", "tcp", func() sdk.Transport {
			return &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "sdk", "/mcp"), MaxRetries: -1, DisableStandaloneSSE: true}
		}},
		{"sse", "tcp", func() sdk.Transport { return &sdk.SSEClientTransport{Endpoint: serverURL(t, comp, "sse", "/sse")} }},
		{"stdio", "pipe", func() sdk.Transport { return &sdk.IOTransport{Reader: outR, Writer: inW} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			client := sdk.NewClient(&sdk.Implementation{Name: "trace-test", Version: "1"}, nil)
			cs, err := client.Connect(testCtx(t), tc.transport(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cs.Close() }()
			caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{byte(i + 1), 1}, SpanID: trace.SpanID{byte(i + 1), 2},
				TraceFlags: trace.FlagsSampled})
			params := &sdk.CallToolParams{Name: "work", Arguments: map[string]any{}}
			params.SetMeta(tracing.InjectMeta(trace.ContextWithSpanContext(context.Background(), caller), nil))
			if res, err := cs.CallTool(testCtx(t), params); err != nil || res.IsError {
				t.Fatalf("tools/call: %v %+v", err, res)
			}
			var call, wf *tracetest.SpanStub
			for deadline := time.Now().Add(30 * time.Second); (call == nil || wf == nil) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				for _, s := range exp.GetSpans() {
					switch s.Name {
					case "tools/call work":
						call = &s
					case "workflow work":
						wf = &s
					}
				}
			}
			if call == nil || wf == nil {
				t.Fatalf("spans %v", exp.GetSpans())
			}
			if call.Parent.SpanID() != caller.SpanID() || call.Parent.TraceID() != caller.TraceID() || call.SpanKind != trace.SpanKindServer {
				t.Errorf("tools/call span: parent %v kind %v, want %v", call.Parent, call.SpanKind, caller)
			}
			if wf.Parent.SpanID() != call.SpanContext.SpanID() {
				t.Errorf("the exchange span's parent is %v, not the tools/call span", wf.Parent.SpanID())
			}
			got := map[string]string{}
			for _, kv := range call.Attributes {
				got[string(kv.Key)] = kv.Value.Emit()
			}
			if got["network.transport"] != tc.network || got["mcp.method.name"] != "tools/call" || got["gen_ai.tool.name"] != "work" {
				t.Errorf("attributes %v", got)
			}
		})
	}
}
