package agent

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/tool"
)

// A tool's error text becomes the status of its execute_tool span; a secret the
// tool echoes (a credential of a server it called) is redacted there too, as in
// every other span status.
func TestToolErrorSpanIsRedacted(t *testing.T) {
	const secret = "tool-span-s3cret-41b7"
	redact.AddSecret(secret)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "turn")
	traceToolCall(ctx, ToolCall{ID: "1", Name: "lookup"}, func(context.Context) tool.Result {
		return tool.ErrorResult("upstream refused https://api.example/x?key=abc with token " + secret)
	})
	parent.End()
	var found bool
	for _, s := range exp.GetSpans() {
		if s.Name != "execute_tool lookup" {
			continue
		}
		found = true
		if d := s.Status.Description; strings.Contains(d, secret) || strings.Contains(d, "key=abc") {
			t.Errorf("span status shows a secret: %s", d)
		}
	}
	if !found {
		t.Fatal("no execute_tool span")
	}
}
