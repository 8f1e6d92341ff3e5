package config

import (
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Tracing exporters and OTLP protocols of helix.tracing.
const (
	TracingExporterOTLP = "otlp"
	TracingExporterNone = "none"

	TracingProtocolHTTP = "http/protobuf"
	TracingProtocolGRPC = "grpc"
)

// TracingConfig is `helix.tracing`: OpenTelemetry tracing of exchanges, steps, MCP
// tool calls and agents' model calls (internal/tracing, docs/tracing.md). The zero value
// is tracing off. Settings left out fall back to the standard OTEL_* environment
// variables the OTLP exporters read, then to the exporters' defaults.
type TracingConfig struct {
	// Exporter is helix.tracing.exporter: otlp switches tracing on; "" and none
	// leave it off.
	Exporter string
	// Endpoint is the collector's base URL (http://collector:4318); "" means
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, else the
	// exporter's default (localhost:4318, or localhost:4317 for grpc).
	Endpoint string
	// Protocol is http/protobuf or grpc; "" means OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
	// / OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.
	Protocol string
	// SampleRatio is the share of new traces recorded (0..1); nil means
	// OTEL_TRACES_SAMPLER, else every trace. A trace whose caller sent a
	// traceparent follows the caller's sampling decision either way.
	SampleRatio *float64
	// ServiceName is the service.name of the spans; "" means OTEL_SERVICE_NAME,
	// else helix.name, else helix.
	ServiceName string
	// Headers are sent with every export (an API key of a hosted backend); they
	// add to and override OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string
	// Insecure sends without TLS when the endpoint (from the environment) does not
	// say http://.
	Insecure bool
	// Pos is where helix.tracing was written.
	Pos Pos
}

// On reports whether tracing is switched on.
func (t *TracingConfig) On() bool { return t.Exporter == TracingExporterOTLP }

// tracingShape declares helix.tracing: its keys, types, enums and descriptions
// drive decoding, the JSON Schema and the docs. What a shape cannot say (the
// endpoint's form, sample_ratio's range with its own hint, insecure against an
// https:// endpoint) decodeTracing checks on the decoded values.
var tracingShape = Shape{Type: TypeObject, What: "helix.tracing",
	Description: "OpenTelemetry tracing: a span per exchange, step, MCP tool call and model call, exported over OTLP (docs/tracing.md). Off unless exporter is otlp.",
	Keys: []Key{
		{Name: "exporter", Shape: Shape{Type: TypeString, What: "tracing exporter", Enum: []string{TracingExporterOTLP, TracingExporterNone},
			Description: "otlp exports spans to an OpenTelemetry collector (or Jaeger, Tempo …); none, the default, traces nothing."}},
		{Name: "endpoint", Shape: str("The collector's URL: http://collector:4318 (http/protobuf; /v1/traces is added when the URL has no path) or http://collector:4317 (grpc). Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, else localhost.")},
		{Name: "protocol", Shape: Shape{Type: TypeString, What: "OTLP protocol", Enum: []string{TracingProtocolHTTP, TracingProtocolGRPC},
			Description: "The OTLP protocol. Default: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf."}},
		{Name: "sample_ratio", Shape: Shape{Type: TypeNumber,
			Description: "The share of new traces recorded, from 0 to 1; a caller's traceparent decides for its trace. Default: OTEL_TRACES_SAMPLER, else 1."}},
		{Name: "service_name", Shape: str("The service.name of the spans. Default: OTEL_SERVICE_NAME, else helix.name, else helix.")},
		{Name: "headers", Shape: Shape{Type: TypeMap, What: "helix.tracing.headers", Values: &Shape{Type: TypeString},
			Description: "Headers sent with every export, name → value (write secrets as ${env:NAME}); they add to OTEL_EXPORTER_OTLP_HEADERS."}},
		{Name: "insecure", Shape: Shape{Type: TypeBool,
			Description: "Export without TLS even when the endpoint (from the environment) gives no http:// scheme. Default false."}},
	}}

// decodeTracing reads helix.tracing into t as tracingShape declares it.
func decodeTracing(d *Decoder, n *yaml.Node, path string, t *TracingConfig) {
	v := d.Decode(n, path, "helix.tracing", &tracingShape)
	if d.desc != nil {
		return
	}
	t.Pos = d.Pos(n)
	t.Exporter, t.Endpoint, t.Protocol = v.String("exporter"), v.String("endpoint"), v.String("protocol")
	t.ServiceName, t.Insecure = v.String("service_name"), v.Bool("insecure")
	if t.Endpoint != "" {
		if msg := checkTracingEndpoint(t.Endpoint); msg != "" {
			d.Errorf(v.NodeOf("endpoint"), v.PathOf("endpoint"), "%s", msg).Hint = "write the collector's URL, for example http://localhost:4318"
		}
	}
	if v.Has("sample_ratio") {
		r := v.Float("sample_ratio")
		if r < 0 || r > 1 {
			d.Errorf(v.NodeOf("sample_ratio"), v.PathOf("sample_ratio"), "sample_ratio must be between 0 and 1, got %g", r).Hint = "0.1 records one trace in ten; 1 records all"
		}
		t.SampleRatio = &r
	}
	if sn := v.NodeOf("service_name"); sn != nil && strings.TrimSpace(t.ServiceName) == "" {
		d.Errorf(sn, v.PathOf("service_name"), "the service name is empty").Hint = "leave the key out to use helix.name"
	}
	if v.Has("headers") {
		t.Headers = map[string]string{}
		for _, pr := range v.Pairs("headers") {
			if hn := d.Resolve(pr.Value); hn != nil && hn.Kind == yaml.ScalarNode { // Decode reported other values
				t.Headers[pr.Key] = d.String(hn, KeyPath(v.PathOf("headers"), pr.Key))
			}
		}
	}
	if t.Insecure && strings.HasPrefix(strings.ToLower(t.Endpoint), "https://") && v.Has("endpoint") {
		d.Errorf(v.NodeOf("insecure"), v.PathOf("insecure"), "insecure: true contradicts the https:// endpoint").Hint =
			"write the endpoint as http://… to export without TLS, or leave insecure out"
	}
}

// checkTracingEndpoint says what is wrong with a collector URL, or "".
func checkTracingEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "the tracing endpoint " + quoteShort(raw) + " is not a URL with a scheme and a host"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "the tracing endpoint must be an http:// or https:// URL, not " + u.Scheme + "://"
	}
	return ""
}

// quoteShort quotes s, cut to 80 bytes: the message must stay readable whatever was written.
func quoteShort(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return `"` + s + `"`
}
