package console

import (
	"context"
	"errors"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// plainTracer traces top-level steps only, as OpenTelemetry's does.
type plainTracer struct{}

func (plainTracer) StartExchange(ctx context.Context, _, _, _ string, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, func(error) {}
}
func (plainTracer) StartStep(ctx context.Context, _ string, _ int, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, func(error) {}
}

// nestedTracer records the nested steps it saw and how they ended.
type nestedTracer struct {
	plainTracer
	tag  string
	seen *[]string
}

func (n nestedTracer) StartNestedStep(ctx context.Context, name string, _ *exchange.Exchange) (context.Context, func(error)) {
	*n.seen = append(*n.seen, n.tag+" start "+name)
	return ctx, func(err error) { *n.seen = append(*n.seen, n.tag+" end "+err.Error()) }
}

// A tee of the application's tracers passes nested steps to those that trace
// them (the step counters) and skips the others (OpenTelemetry's).
func TestTeeForwardsNestedStepsToTheTracersThatTakeThem(t *testing.T) {
	t.Parallel()
	var seen []string
	tr := Tee(plainTracer{}, nestedTracer{tag: "a", seen: &seen}, plainTracer{}, nestedTracer{tag: "b", seen: &seen})
	nt, ok := tr.(engine.NestedTracer)
	if !ok {
		t.Fatal("a tee is no engine.NestedTracer")
	}
	_, end := nt.StartNestedStep(context.Background(), "x.yaml:3:9 log", nil)
	end(errors.New("boom"))
	want := []string{"a start x.yaml:3:9 log", "b start x.yaml:3:9 log", "b end boom", "a end boom"}
	if len(seen) != len(want) {
		t.Fatalf("seen %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("seen %q, want %q", seen, want)
		}
	}

	seen = nil
	one := Tee(plainTracer{}, nestedTracer{tag: "only", seen: &seen}).(engine.NestedTracer)
	_, end = one.StartNestedStep(context.Background(), "y", nil)
	end(errors.New("e"))
	if len(seen) != 2 || seen[0] != "only start y" || seen[1] != "only end e" {
		t.Fatalf("one nested tracer in the tee: %q", seen)
	}

	none := Tee(plainTracer{}, plainTracer{}).(engine.NestedTracer)
	_, end = none.StartNestedStep(context.Background(), "z", nil)
	end(nil) // nothing to call: must not panic
}
