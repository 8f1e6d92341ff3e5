// Package export builds the OpenTelemetry SDK's tracer provider and the OTLP
// exporter of helix.tracing for one application. Only the application (pkg/app)
// imports it: components start spans through internal/tracing, which links
// neither the SDK nor the exporters (nor the gRPC stack of OTLP/gRPC).
package export

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

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tracing"
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

// Provider is the tracer provider of one application and its exporter. Build it
// with [New] (no side effects), give [Provider.Tracer] to the engine, [Provider.Start]
// it before the engine starts and [Provider.Shutdown] it after the engine stopped.
type Provider struct {
	cfg  config.TracingConfig
	opts Options
	// protocol is the OTLP protocol chosen (YAML, else environment, else http).
	protocol string

	tracer *tracing.Tracer
	tp     *sdktrace.TracerProvider
	// processors see every span beside the exporter (AddSpanProcessor).
	processors []sdktrace.SpanProcessor
}

// AddSpanProcessor makes sp see every span of the application beside the
// exporter: the web console keeps the last traces for its Traces page. Call it
// before Start. sp's OnEnd runs on the goroutine that ends the span, so it must
// return at once.
func (p *Provider) AddSpanProcessor(sp sdktrace.SpanProcessor) {
	p.processors = append(p.processors, sp)
}

// New checks cfg and the OTEL_* environment it depends on and returns the
// application's provider, or nil (and no error) when tracing is off: exporter
// none or not set, or OTEL_SDK_DISABLED=true. Nothing is started or dialled.
func New(cfg config.TracingConfig, opts Options) (*Provider, error) {
	if opts.Exporter == nil && (!cfg.On() || strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true")) {
		return nil, nil
	}
	p := &Provider{cfg: cfg, opts: opts, protocol: cfg.Protocol, tracer: tracing.NewTracer()}
	if p.protocol == "" {
		p.protocol = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p.protocol {
	case "":
		p.protocol = config.TracingProtocolHTTP
	case config.TracingProtocolHTTP, config.TracingProtocolGRPC:
	default:
		return nil, fmt.Errorf("helix.tracing: OTLP protocol %q (from OTEL_EXPORTER_OTLP_PROTOCOL) is not supported; use http/protobuf or grpc", p.protocol)
	}
	return p, nil
}

// Tracer is the application's tracer, for the engine and the components; its
// spans go nowhere until Start.
func (p *Provider) Tracer() *tracing.Tracer { return p.tracer }

// Protocol is the OTLP protocol the exporter speaks: http/protobuf or grpc.
func (p *Provider) Protocol() string { return p.protocol }

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// Start creates the exporter and the tracer provider (its batch processor
// goroutine) and points the tracer at it. The OTLP exporters connect lazily: a
// collector that is down costs dropped spans and a logged error, never a failed
// start.
func (p *Provider) Start(ctx context.Context) error {
	res, err := p.resource(ctx)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if r := p.cfg.SampleRatio; r != nil {
		popts = append(popts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
	}
	if p.opts.Exporter != nil {
		popts = append(popts, sdktrace.WithSyncer(p.opts.Exporter))
	} else {
		exp, err := p.exporter(ctx)
		if err != nil {
			return fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
		popts = append(popts, sdktrace.WithBatcher(exp))
	}
	for _, sp := range p.processors {
		popts = append(popts, sdktrace.WithSpanProcessor(sp))
	}
	p.tp = sdktrace.NewTracerProvider(popts...)
	p.tracer.Use(p.tp)
	return nil
}

// Shutdown exports the spans still queued and stops the provider; ctx bounds how
// long that may take (helix.shutdown_timeout). Safe to call when Start failed.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.tp == nil {
		return nil
	}
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}

// resource is service.name and the OTEL_RESOURCE_ATTRIBUTES of the environment, in
// this order of precedence: helix.tracing.service_name, OTEL_SERVICE_NAME,
// helix.name.
func (p *Provider) resource(ctx context.Context) (*resource.Resource, error) {
	name := p.opts.DefaultServiceName
	if name == "" {
		name = "helix"
	}
	base := []attribute.KeyValue{attribute.String("service.name", name)}
	if p.opts.ServiceVersion != "" {
		base = append(base, attribute.String("service.version", p.opts.ServiceVersion))
	}
	env, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	res, err := resource.Merge(resource.NewSchemaless(base...), env)
	if err != nil {
		return nil, err
	}
	if p.cfg.ServiceName != "" {
		return resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", p.cfg.ServiceName)))
	}
	return res, nil
}

// exporter builds the OTLP exporter. Only what helix.tracing sets is passed as an
// option: the exporters read OTEL_EXPORTER_OTLP_* for the rest, and an option
// overrides its variable.
func (p *Provider) exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	c := p.cfg
	if p.protocol == config.TracingProtocolGRPC {
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
