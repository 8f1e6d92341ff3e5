package tracing

import (
	"os/exec"
	"strings"
	"testing"
)

// heavyTracingPackages are the OpenTelemetry SDK and the OTLP exporters (and the
// gRPC stack they bring): only the application (pkg/app, through
// internal/tracing/export) may link them.
var heavyTracingPackages = []string{
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters/",
	"github.com/arvenza/helix/internal/tracing/export",
}

// Components start spans through this package's small API; the exporter setup
// lives in internal/tracing/export, which no component imports.
func TestComponentsDoNotLinkTheExporters(t *testing.T) {
	t.Parallel()
	pkgs := []string{".", "../component/..."}
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var found []string
	for _, p := range strings.Fields(string(out)) {
		for _, heavy := range heavyTracingPackages {
			if p == heavy || strings.HasPrefix(p, heavy+"/") || (strings.HasSuffix(heavy, "/") && strings.HasPrefix(p, heavy)) {
				found = append(found, p)
			}
		}
	}
	if len(found) > 0 {
		t.Errorf("internal/tracing and internal/component/... link %d packages of the SDK or the exporters: %v", len(found), found)
	}
}

// The check above must be able to fail: the application does link the exporters.
func TestTheApplicationLinksTheExporters(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "../../pkg/app").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if !strings.Contains(string(out), "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp\n") {
		t.Error("pkg/app does not link the OTLP/HTTP exporter: is the list of heavy packages current?")
	}
}
