package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/internal/tracing"
	"github.com/arvenza/helix/internal/tracing/export"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// On every transport a tools/call is a "tools/call <tool>" server span whose
// parent is the caller's params._meta.traceparent, with the exchange's span
// below it; the stdio server says network.transport pipe.
func TestToolsCallSpanOnEveryTransport(t *testing.T) {
	t.Parallel()
	hc, exp := tracedWorkContext(t)
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
			for deadline := time.Now().Add(testtools.StartupBound); (call == nil || wf == nil) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
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
				got[string(kv.Key)] = kv.Value.String()
			}
			if got["network.transport"] != tc.network || got["mcp.method.name"] != "tools/call" || got["gen_ai.tool.name"] != "work" {
				t.Errorf("attributes %v", got)
			}
		})
	}
}

// A traced call's tools/call span is the same on the fast path as on the SDK
// path: the fast path serves a call whose _meta carries only traceparent and
// tracestate (a traced mcp:// client's calls), and its span has the caller's
// parent, the same name, kind and attributes (mcp.protocol.version and
// mcp.session.id included); receiving middleware sees the same _meta.
func TestFastPathTracedCallMatchesSDKPath(t *testing.T) {
	t.Parallel()
	hc, exp := tracedWorkContext(t)
	var mu sync.Mutex
	metas := map[string]sdk.Meta{}
	record := func(id string) sdk.Middleware {
		return func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				if cr, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" {
					mu.Lock()
					metas[id] = cr.Params.Meta
					mu.Unlock()
				}
				return next(ctx, method, req)
			}
		}
	}
	var opts []Options
	for _, id := range []string{"fast", "sdk", "fast-stateless", "sdk-stateless"} {
		opts = append(opts, Options{ID: id, Addr: "127.0.0.1:0", Stateless: strings.HasSuffix(id, "stateless"),
			DisableFastToolCalls: strings.HasPrefix(id, "sdk"), ReceivingMiddleware: []sdk.Middleware{record(id)}})
	}
	comp := startContext(t, hc, opts...)
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7, 1}, SpanID: trace.SpanID{7, 2},
		TraceFlags: trace.FlagsSampled, TraceState: mustTraceState(t, "vendor=x")})
	// span calls the server id's work tool once with the caller's trace context in
	// _meta and returns its tools/call span, its attributes without the session id's
	// value (each server has its own ids) and whether the fast path served it.
	span := func(id string) (tracetest.SpanStub, map[string]string, bool) {
		exp.Reset()
		before := fastServed(comp, id)
		meta := tracing.InjectMeta(trace.ContextWithSpanContext(context.Background(), caller), nil)
		if strings.HasSuffix(id, "stateless") {
			// The go-sdk client speaks 2026-07-28 to a stateless server, which the
			// fast path leaves to the SDK; a 2025-11-25 client's POST is what it serves.
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
				"params": map[string]any{"name": "work", "arguments": map[string]any{}, "_meta": meta}})
			if r := send(t, http.MethodPost, serverURL(t, comp, id, "/mcp"), map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
				string(body)); r.status != http.StatusOK || !strings.Contains(string(r.body), "done") {
				t.Fatalf("%s: tools/call: %d %s", id, r.status, r.body)
			}
		} else {
			// A 2025-11-25 session: the fast path serves sessions, not the
			// sessionless 2026-07-28 requests the go-sdk client sends by default.
			client := sdk.NewClient(&sdk.Implementation{Name: "trace-test", Version: "1"}, nil)
			cs, err := client.Connect(testCtx(t), &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, id, "/mcp"), MaxRetries: -1,
				DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cs.Close() }()
			params := &sdk.CallToolParams{Name: "work", Arguments: map[string]any{}}
			params.SetMeta(meta)
			if res, err := cs.CallTool(testCtx(t), params); err != nil || res.IsError {
				t.Fatalf("%s: tools/call: %v %+v", id, err, res)
			}
		}
		for deadline := time.Now().Add(testtools.StartupBound); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, s := range exp.GetSpans() {
				if s.Name == "tools/call work" {
					attrs := map[string]string{}
					for _, kv := range s.Attributes {
						attrs[string(kv.Key)] = kv.Value.String()
					}
					if attrs["mcp.session.id"] != "" {
						attrs["mcp.session.id"] = "(set)"
					}
					delete(attrs, "helix.mcp.server") // the server's id

					return s, attrs, fastServed(comp, id) > before
				}
			}
		}
		t.Fatalf("%s: no tools/call span in %v", id, exp.GetSpans())
		return tracetest.SpanStub{}, nil, false
	}
	for _, suffix := range []string{"", "-stateless"} {
		fastSpan, fastAttrs, served := span("fast" + suffix)
		if !served {
			t.Errorf("fast%s: the fast path did not serve the traced call", suffix)
		}
		sdkSpan, sdkAttrs, _ := span("sdk" + suffix)
		for _, s := range []tracetest.SpanStub{fastSpan, sdkSpan} {
			if s.Parent.SpanID() != caller.SpanID() || s.Parent.TraceID() != caller.TraceID() || s.Parent.TraceState().String() != "vendor=x" ||
				s.SpanKind != trace.SpanKindServer {
				t.Errorf("span parent %v (state %q) kind %v, want %v", s.Parent, s.Parent.TraceState().String(), s.SpanKind, caller)
			}
		}
		if !reflect.DeepEqual(fastAttrs, sdkAttrs) {
			t.Errorf("stateless=%v: attributes differ:\nfast: %v\nsdk:  %v", suffix != "", fastAttrs, sdkAttrs)
		}
		if fastSpan.Status != sdkSpan.Status {
			t.Errorf("status %v against %v", fastSpan.Status, sdkSpan.Status)
		}
		mu.Lock()
		fm, sm := metas["fast"+suffix], metas["sdk"+suffix]
		mu.Unlock()
		if fm["traceparent"] == nil || !reflect.DeepEqual(fm, sm) {
			t.Errorf("middleware saw _meta %v on the fast path, %v on the SDK path", fm, sm)
		}
	}
}

func mustTraceState(t *testing.T, s string) trace.TraceState {
	t.Helper()
	ts, err := trace.ParseTraceState(s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// tracedWorkContext is an engine context with a "work" workflow answering "done",
// traced into the returned in-memory exporter.
func tracedWorkContext(t *testing.T) (*engine.Context, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := export.New(config.TracingConfig{}, export.Options{Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	hc := newTestContext(t, &engine.Workflow{ID: "work", FromURI: "direct://work", Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error { ex.In().SetBody("done"); return nil })}})
	hc.SetTracer(tr.Tracer())
	return hc, exp
}
