package config

import (
	"strings"
	"testing"
)

func TestTracingKeys(t *testing.T) {
	t.Setenv("HELIX_TEST_OTLP_KEY", "k3y")
	cfg, errs := load(t, `
helix:
  tracing:
    exporter: otlp
    endpoint: http://collector:4318
    protocol: grpc
    sample_ratio: 0.25
    service_name: orders
    headers:
      x-api-key: ${env:HELIX_TEST_OTLP_KEY}
    insecure: true
`)
	if errs != nil {
		t.Fatal(errs)
	}
	tc := cfg.Helix.Tracing
	if !tc.On() || tc.Endpoint != "http://collector:4318" || tc.Protocol != "grpc" || tc.SampleRatio == nil || *tc.SampleRatio != 0.25 ||
		tc.ServiceName != "orders" || tc.Headers["x-api-key"] != "k3y" || !tc.Insecure || tc.Pos.Line != 4 {
		t.Fatalf("tracing = %+v", tc)
	}
	cfg, errs = load(t, "helix:\n  name: x\n")
	if errs != nil || cfg.Helix.Tracing.On() || cfg.Helix.Tracing.SampleRatio != nil {
		t.Fatalf("tracing is off by default: %v %+v", errs, cfg.Helix.Tracing)
	}
	cfg, errs = load(t, "helix:\n  tracing:\n    exporter: none\n    endpoint: http://c:4318\n")
	if errs != nil || cfg.Helix.Tracing.On() {
		t.Fatalf("exporter none: %v %+v", errs, cfg.Helix.Tracing)
	}
}

func TestTracingErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"helix:\n  tracing:\n    exporter: otpl\n", []string{"helix.yaml:3:15", "helix.tracing.exporter", `unknown tracing exporter "otpl"`, "otlp"}},
		{"helix:\n  tracing:\n    exporter: otlp\n    protocol: http/json\n", []string{"helix.yaml:4:15", `unknown OTLP protocol "http/json"`}},
		{"helix:\n  tracing:\n    exporter: otlp\n    sample_ratio: 1.5\n", []string{"helix.yaml:4:19", "between 0 and 1"}},
		{"helix:\n  tracing:\n    exporter: otlp\n    sample_ratio: half\n", []string{"helix.yaml:4:19", "want a number"}},
		{"helix:\n  tracing:\n    exporter: otlp\n    endpoint: collector:4318\n", []string{"helix.yaml:4:15", "not a URL with a scheme and a host"}},
		{"helix:\n  tracing:\n    exporter: otlp\n    endpoint: grpc://collector:4317\n", []string{"helix.yaml:4:15", "not grpc://"}},
		{"helix:\n  tracing:\n    exporter: otlp\n    endpoint: https://c:4318\n    insecure: true\n", []string{"helix.yaml:5:15", "contradicts the https:// endpoint"}},
		{"helix:\n  tracing:\n    exporter: otlp\n    service_name: \" \"\n", []string{"helix.yaml:4:19", "service name is empty"}},
		{"helix:\n  tracing:\n    exporter: otlp\n    headers: [a, b]\n", []string{"helix.yaml:4:14", "must be a mapping"}},
		{"helix:\n  tracing:\n    exporter: otlp\n    sampler: always\n", []string{"helix.yaml:4:5", "sampler"}},
	} {
		_, errs := load(t, tc.yaml)
		if errs == nil {
			t.Errorf("%q: no error", tc.yaml)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errs.Error(), w) {
				t.Errorf("%q: error %q does not contain %q", tc.yaml, errs.Error(), w)
			}
		}
	}
}
