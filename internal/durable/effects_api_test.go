package durable

import (
	"context"
	"testing"

	"github.com/arvenza/helix/pkg/exchange"
)

// SubKey refines a key and leaves a context without one alone (no key appears
// out of nothing outside a durable run).
func TestSubKey(t *testing.T) {
	t.Parallel()
	if _, ok := KeyFrom(SubKey(context.Background(), "x")); ok {
		t.Fatal("SubKey made a key where there was none")
	}
	ctx := SubKey(SubKey(WithKey(context.Background(), "run/2/0"), "a.yaml:3:5"), "[1]")
	if k, _ := KeyFrom(ctx); k != "run/2/0/a.yaml:3:5/[1]" {
		t.Fatalf("key %q", k)
	}
}

// A redelivery (a failure the error handler retries) gets keys of its own; the
// same attempt keeps its key, also when the run id has slashes in it.
func TestWithRedelivery(t *testing.T) {
	t.Parallel()
	ctx := WithKey(WithDurable(context.Background(), "wf:a/b"), "wf:a/b/3/0")
	ex := exchange.NewWithBody(exchange.InOut, nil)
	if k, _ := KeyFrom(WithRedelivery(ctx, ex)); k != "wf:a/b/3/0" {
		t.Fatalf("first attempt: %q", k)
	}
	ex.In().SetHeader(exchange.HeaderRedeliveryCount, 2)
	if k, _ := KeyFrom(WithRedelivery(ctx, ex)); k != "wf:a/b/3/2" {
		t.Fatalf("second redelivery: %q", k)
	}
	refined := SubKey(WithRedelivery(SubKey(ctx, "[1]"), ex), "x.yaml:2:3")
	if k, _ := KeyFrom(refined); k != "wf:a/b/3/2/[1]/x.yaml:2:3" {
		t.Fatalf("inside a split: %q", k)
	}
	if _, ok := KeyFrom(WithRedelivery(context.Background(), ex)); ok {
		t.Fatal("a key outside a durable run")
	}
}
