// Package proof_test shows that adding a component is one folder plus one import:
// the sample component under ../testdata/sample is imported here and nowhere else,
// and validation, the JSON Schema, the generated component pages and tracing all
// pick it up. It is a package of its own so that no other test binary (the docs
// tests of internal/cli, the scheme table of internal/component/all) sees the
// sample component.
package proof_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/cli"
	_ "github.com/arvenza/helix/internal/component/all/testdata/sample" // the one import
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tracing/export"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func helix(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Execute(args, strings.NewReader(""), &out, &out)
	return out.String(), code
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestModuleValidates(t *testing.T) {
	good := writeFile(t, "workflows:\n  - id: w\n    trigger: sample://alpha?shout=true\n    steps:\n      - to: sample://beta\n")
	if out, code := helix(t, "validate", good); code != 0 {
		t.Fatalf("validate of a sample:// workflow: exit %d\n%s", code, out)
	}
	bad := writeFile(t, "workflows:\n  - id: w\n    trigger: sample://alpha?shoutt=true\n")
	out, code := helix(t, "validate", bad)
	if code == 0 || !strings.Contains(out, "helix.yaml:3:14") || !strings.Contains(out, `"shout"`) {
		t.Fatalf("validate of an unknown sample:// option: exit %d, want an error at 3:14 with a did-you-mean:\n%s", code, out)
	}
}

// helix.sample, declared by the module, is decoded by it (mistakes at their
// position) and reaches the component the module builds.
func TestModuleSettings(t *testing.T) {
	bad := writeFile(t, "helix:\n  sample:\n    greetin: hi\n")
	if out, code := helix(t, "validate", bad); code == 0 || !strings.Contains(out, "helix.yaml:3:5") || !strings.Contains(out, `did you mean "greeting"`) {
		t.Fatalf("validate of a misspelt helix.sample key: exit %d\n%s", code, out)
	}
	path := writeFile(t, "helix:\n  sample:\n    greeting: hi\n  management: {enabled: false}\n")
	a, _, err := app.Load(app.Options{}, path)
	if err != nil {
		t.Fatal(err)
	}
	comp, ok := a.Context().Component("sample")
	if !ok {
		t.Fatal("the application has no sample:// component")
	}
	u, _ := uri.Parse("sample://bob")
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ep.CreateProducer()
	ex := exchange.NewWithBody(exchange.InOut, "")
	if err := p.Process(context.Background(), ex); err != nil || ex.In().Body() != "hi bob" {
		t.Errorf("answer %v, %v; want helix.sample.greeting's \"hi bob\"", ex.In().Body(), err)
	}
}

func TestModuleInJSONSchema(t *testing.T) {
	out, code := helix(t, "schema")
	if code != 0 {
		t.Fatalf("schema: exit %d\n%s", code, out)
	}
	for _, want := range []string{`"sample"`, `shout`, `What sample:// producers say before the name.`} {
		if !strings.Contains(out, want) {
			t.Errorf("the JSON Schema lacks %s (the sample scheme, its option, its helix.sample.greeting)", want)
		}
	}
}

func TestModuleInComponentDocs(t *testing.T) {
	dir := t.TempDir()
	if out, code := helix(t, "components", "--markdown", dir); code != 0 {
		t.Fatalf("components --markdown: exit %d\n%s", code, out)
	}
	page, err := os.ReadFile(filepath.Join(dir, "sample.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "shout") {
		t.Errorf("sample.md does not document shout:\n%s", page)
	}
	index, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if !strings.Contains(string(index), "(sample.md)") {
		t.Error("the component index does not list sample://")
	}
	out, _ := helix(t, "components")
	if !strings.Contains(out, "sample") {
		t.Errorf("helix components does not list sample://:\n%s", out)
	}
}

func TestModuleTraceHook(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p, err := export.New(config.TracingConfig{Exporter: config.TracingExporterOTLP}, export.Options{Exporter: exp})
	if err != nil || p == nil {
		t.Fatalf("tracer %v, %v", p, err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	tr := p.Tracer()
	_, end := tr.StartExchange(context.Background(), "workflow", "w", "sample://alpha?shout=true", exchange.NewWithBody(exchange.InOut, "x"))
	end(nil)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	if spans[0].SpanKind != trace.SpanKindConsumer {
		t.Errorf("span kind %v, want consumer (the sample trace hook's)", spans[0].SpanKind)
	}
	want := attribute.String("sample.name", "alpha")
	found := false
	for _, a := range spans[0].Attributes {
		found = found || a == want
	}
	if !found {
		t.Errorf("attributes %v lack %v", spans[0].Attributes, want)
	}
}
