package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/arvenza/helix/internal/config"
)

// Options tune [New]. The zero value is valid.
type Options struct {
	// DefaultServiceName is the service.name when neither helix.tracing.service_name
	// nor OTEL_SERVICE_NAME gives one: helix.name; "" means "helix".
	DefaultServiceName string
	// ServiceVersion is service.version ("" leaves it out).
	ServiceVersion string
	// Exporter, when set, receives every span as it ends (synchronously) in place
	// of the OTLP exporter of the configuration, and switches tracing on whatever
	// helix.tracing.exporter says: tests pass tracetest.NewInMemoryExporter().
	Exporter sdktrace.SpanExporter
}

// Tracer is the tracing of one application: its tracer provider, and the spans of
// exchanges and steps the engine asks for. Build it with [New] (no side effects),
// [Tracer.Start] it before the engine starts and [Tracer.Shutdown] it after the
// engine stopped. Its span methods are safe for concurrent use.
type Tracer struct {
	cfg  config.TracingConfig
	opts Options
	// protocol is the OTLP protocol chosen (YAML, else environment, else http).
	protocol string

	tp *sdktrace.TracerProvider
	tr trace.Tracer
}

// New checks cfg and the OTEL_* environment it depends on and returns the
// application's tracer, or nil (and no error) when tracing is off: exporter none
// or not set, or OTEL_SDK_DISABLED=true. Nothing is started or dialled.
func New(cfg config.TracingConfig, opts Options) (*Tracer, error) {
	if opts.Exporter == nil && (!cfg.On() || strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true")) {
		return nil, nil
	}
	t := &Tracer{cfg: cfg, opts: opts, protocol: cfg.Protocol}
	if t.protocol == "" {
		t.protocol = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch t.protocol {
	case "":
		t.protocol = config.TracingProtocolHTTP
	case config.TracingProtocolHTTP, config.TracingProtocolGRPC:
	default:
		return nil, fmt.Errorf("helix.tracing: OTLP protocol %q (from OTEL_EXPORTER_OTLP_PROTOCOL) is not supported; use http/protobuf or grpc", t.protocol)
	}
	return t, nil
}

// Protocol is the OTLP protocol the exporter speaks: http/protobuf or grpc.
func (t *Tracer) Protocol() string { return t.protocol }

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// Start creates the exporter and the tracer provider (its batch processor
// goroutine). The OTLP exporters connect lazily: a collector that is down costs
// dropped spans and a logged error, never a failed start.
func (t *Tracer) Start(ctx context.Context) error {
	res, err := t.resource(ctx)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if r := t.cfg.SampleRatio; r != nil {
		popts = append(popts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
	}
	if t.opts.Exporter != nil {
		popts = append(popts, sdktrace.WithSyncer(t.opts.Exporter))
	} else {
		exp, err := t.exporter(ctx)
		if err != nil {
			return fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
		popts = append(popts, sdktrace.WithBatcher(exp))
	}
	t.tp = sdktrace.NewTracerProvider(popts...)
	t.tr = t.tp.Tracer(ScopeName)
	return nil
}

// Shutdown exports the spans still queued and stops the provider; ctx bounds how
// long that may take (helix.shutdown_timeout). Safe to call when Start failed.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}

// Provider returns the tracer provider (nil before Start), for code that starts
// root spans of its own: the MCP server's tools/call spans.
func (t *Tracer) Provider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp
}

// tracer is the tracer of the provider; spans asked for before Start (nothing runs
// then) would go nowhere.
func (t *Tracer) tracer() trace.Tracer {
	if t.tr == nil {
		return noop.NewTracerProvider().Tracer(ScopeName)
	}
	return t.tr
}

// StartSpan starts a span of this application's tracer: a child of the span (or
// remote span context) in ctx, else a root. Safe for concurrent use.
func (t *Tracer) StartSpan(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return t.tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// resource is service.name and the OTEL_RESOURCE_ATTRIBUTES of the environment, in
// this order of precedence: helix.tracing.service_name, OTEL_SERVICE_NAME,
// helix.name.
func (t *Tracer) resource(ctx context.Context) (*resource.Resource, error) {
	name := t.opts.DefaultServiceName
	if name == "" {
		name = "helix"
	}
	base := []attribute.KeyValue{attribute.String("service.name", name)}
	if t.opts.ServiceVersion != "" {
		base = append(base, attribute.String("service.version", t.opts.ServiceVersion))
	}
	env, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	res, err := resource.Merge(resource.NewSchemaless(base...), env)
	if err != nil {
		return nil, err
	}
	if t.cfg.ServiceName != "" {
		return resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", t.cfg.ServiceName)))
	}
	return res, nil
}

// exporter builds the OTLP exporter. Only what helix.tracing sets is passed as an
// option: the exporters read OTEL_EXPORTER_OTLP_* for the rest, and an option
// overrides its variable.
func (t *Tracer) exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	c := t.cfg
	if t.protocol == config.TracingProtocolGRPC {
		var o []otlptracegrpc.Option
		if c.Endpoint != "" {
			o = append(o, otlptracegrpc.WithEndpointURL(c.Endpoint))
		}
		if c.Insecure {
			o = append(o, otlptracegrpc.WithInsecure())
		}
		if len(c.Headers) > 0 {
			o = append(o, otlptracegrpc.WithHeaders(c.Headers))
		}
		return otlptracegrpc.New(ctx, o...)
	}
	var o []otlptracehttp.Option
	if c.Endpoint != "" {
		o = append(o, otlptracehttp.WithEndpointURL(tracesURL(c.Endpoint)))
	}
	if c.Insecure {
		o = append(o, otlptracehttp.WithInsecure())
	}
	if len(c.Headers) > 0 {
		o = append(o, otlptracehttp.WithHeaders(c.Headers))
	}
	return otlptracehttp.New(ctx, o...)
}

// tracesURL adds OTLP/HTTP's /v1/traces to a collector URL without a path, as the
// exporter does for OTEL_EXPORTER_OTLP_ENDPOINT: http://collector:4318 is the
// collector, not the traces endpoint.
func tracesURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || strings.Trim(u.Path, "/") != "" {
		return raw
	}
	u.Path = "/v1/traces"
	return u.String()
}
