package durable

import (
	"context"
	"testing"
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
