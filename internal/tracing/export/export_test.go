package export_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tracing/export"
	"github.com/arvenza/helix/pkg/exchange"
)

// received is what a fake collector got: the service names and span names of the
// exports, and the headers of the requests.
type received struct {
	mu       sync.Mutex
	services []string
	spans    []string
	apiKeys  []string
}

func (r *received) add(req *coltracepb.ExportTraceServiceRequest, apiKey string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.apiKeys = append(r.apiKeys, apiKey)
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				r.services = append(r.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, s.GetName())
			}
		}
	}
}

func (r *received) snapshot() (services, spans, keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.services...), append([]string(nil), r.spans...), append([]string(nil), r.apiKeys...)
}

// otlpHTTP is a collector speaking OTLP/HTTP (protobuf) at /v1/traces.
func otlpHTTP(t *testing.T, got *received) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got.add(req, r.Header.Get("X-Api-Key"))
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	got *received
}

func (c *grpcCollector) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	key := ""
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get("x-api-key")) > 0 {
		key = md.Get("x-api-key")[0]
	}
	c.got.add(req, key)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// otlpGRPC is a collector speaking OTLP/gRPC.
func otlpGRPC(t *testing.T, got *received) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, &grpcCollector{got: got})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

// exportOne starts a tracer for cfg, records one exchange with one step and
// shuts the tracer down, which must flush the batch.
func exportOne(t *testing.T, cfg config.TracingConfig) {
	t.Helper()
	tr, err := export.New(cfg, export.Options{DefaultServiceName: "from-helix-name", ServiceVersion: "1.2.3"})
	if err != nil || tr == nil {
		t.Fatalf("New: %v %v", tr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ex := exchange.NewWithBody(exchange.InOut, "x")
	sctx, endExchange := tr.Tracer().StartExchange(ctx, "workflow", "orders", "direct://orders", ex)
	_, endStep := tr.Tracer().StartStep(sctx, "helix.yaml:7:9 transform", 0, ex)
	endStep(nil)
	endExchange(errors.New("boom"))
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// The configured OTLP exporter, over both protocols, delivers the spans with the
// service name and the configured headers when the tracer shuts down.
func TestOTLPExporterDeliversSpans(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		start    func(*testing.T, *received) string
	}{
		{config.TracingProtocolHTTP, otlpHTTP},
		{config.TracingProtocolGRPC, otlpGRPC},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			got := &received{}
			exportOne(t, config.TracingConfig{Exporter: config.TracingExporterOTLP, Endpoint: tc.start(t, got),
				Protocol: tc.protocol, ServiceName: "orders-svc", Headers: map[string]string{"x-api-key": "k3y"}})
			services, spans, keys := got.snapshot()
			if strings.Join(spans, ",") != "step transform,workflow orders" {
				t.Errorf("spans %v", spans)
			}
			if len(services) == 0 || services[0] != "orders-svc" {
				t.Errorf("service names %v, want orders-svc", services)
			}
			if len(keys) == 0 || keys[0] != "k3y" {
				t.Errorf("x-api-key headers %v", keys)
			}
		})
	}
}

// Left out of YAML, the endpoint, headers and service name come from the OTEL_*
// variables; helix.name is the last resort for the service name.
func TestOTLPEnvironment(t *testing.T) {
	got := &received{}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlpHTTP(t, got))
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=from-env")
	t.Setenv("OTEL_SERVICE_NAME", "env-svc")
	exportOne(t, config.TracingConfig{Exporter: config.TracingExporterOTLP})
	services, spans, keys := got.snapshot()
	if len(spans) != 2 || len(services) == 0 || services[0] != "env-svc" || keys[0] != "from-env" {
		t.Errorf("from the environment: services %v spans %v keys %v", services, spans, keys)
	}

	got2 := &received{}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlpHTTP(t, got2))
	t.Setenv("OTEL_SERVICE_NAME", "")
	exportOne(t, config.TracingConfig{Exporter: config.TracingExporterOTLP})
	if services, _, _ := got2.snapshot(); len(services) == 0 || services[0] != "from-helix-name" {
		t.Errorf("service names %v, want helix.name's", services)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := export.New(config.TracingConfig{Exporter: config.TracingExporterOTLP}, export.Options{}); err == nil ||
		!strings.Contains(err.Error(), "http/json") {
		t.Errorf("unsupported protocol from the environment: %v", err)
	}
}

// HELIX_OTLP_ENDPOINT names a real collector (http://host:4318); without it the
// test skips.
func TestRealCollector(t *testing.T) {
	endpoint := os.Getenv("HELIX_OTLP_ENDPOINT")
	if endpoint == "" {
		t.Skip("HELIX_OTLP_ENDPOINT is not set (a collector's OTLP/HTTP URL, e.g. http://localhost:4318)")
	}
	protocol := os.Getenv("HELIX_OTLP_PROTOCOL")
	exportOne(t, config.TracingConfig{Exporter: config.TracingExporterOTLP, Endpoint: endpoint, Protocol: protocol,
		ServiceName: "helix-test"})
}

func TestOffUnlessConfigured(t *testing.T) {
	for _, cfg := range []config.TracingConfig{{}, {Exporter: config.TracingExporterNone, Endpoint: "http://c:4318"}} {
		if tr, err := export.New(cfg, export.Options{}); tr != nil || err != nil {
			t.Errorf("%+v: tracer %v, error %v; want none", cfg, tr, err)
		}
	}
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if tr, _ := export.New(config.TracingConfig{Exporter: config.TracingExporterOTLP}, export.Options{}); tr != nil {
		t.Error("OTEL_SDK_DISABLED=true did not switch tracing off")
	}
}

// A sample ratio of 0 records no new trace, but a caller's sampled traceparent is
// followed.
func TestSampleRatio(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	zero := 0.0
	tr, _ := export.New(config.TracingConfig{Exporter: config.TracingExporterOTLP, SampleRatio: &zero}, export.Options{Exporter: exp})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	ex := exchange.NewWithBody(exchange.InOut, "x")
	_, end := tr.Tracer().StartExchange(context.Background(), "workflow", "w", "direct://w", ex)
	end(nil)
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans recorded at ratio 0", n)
	}
	ex.In().SetHeader("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	_, end = tr.Tracer().StartExchange(context.Background(), "workflow", "w", "http-server://0.0.0.0:8080/w", ex)
	end(nil)
	if spans := exp.GetSpans(); len(spans) != 1 || spans[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("spans %v, want the caller's sampled trace", spans)
	}
}

// A span processor added before Start sees every span beside the exporter (the
// console's trace store).
func TestAddSpanProcessor(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tr, _ := export.New(config.TracingConfig{Exporter: config.TracingExporterOTLP}, export.Options{Exporter: exp})
	beside := tracetest.NewSpanRecorder()
	tr.AddSpanProcessor(beside)
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	ex := exchange.NewWithBody(exchange.InOut, "x")
	_, end := tr.Tracer().StartExchange(context.Background(), "workflow", "w", "direct://w", ex)
	end(nil)
	if got := beside.Ended(); len(got) != 1 || got[0].Name() != "workflow w" {
		t.Fatalf("processor saw %v", got)
	}
	if n := len(exp.GetSpans()); n != 1 {
		t.Fatalf("exporter got %d spans", n)
	}
}
