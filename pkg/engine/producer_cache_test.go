package engine_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestProducerLookupByTextAllocatesNothing: a target's producer is found by the URI
// text it names, without parsing and normalising the URI on every exchange; two
// spellings of one URI still share one producer, and none is handed out after Stop.
func TestProducerLookupByTextAllocatesNothing(t *testing.T) {
	lc := &lifeCounter{}
	hc := engine.NewContext("bytext")
	hc.AddComponent("life", lc)
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p1, err := hc.Producer(ctx, "life://in?b=1&a=2")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := hc.Producer(ctx, "life://in?a=2&b=1")
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 {
		t.Fatal("two spellings of one URI got two producers")
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := hc.Producer(ctx, "life://in?a=2&b=1"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a known producer's lookup allocates %v times", n)
	}
	if err := hc.Send(ctx, "life://in?a=2&b=1", exchange.NewWithBody(exchange.InOnly, "x")); err != nil {
		t.Fatal(err)
	}
	if err := hc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if lc.started.Load() != 1 || lc.stopped.Load() != 1 {
		t.Fatalf("producers started %d, stopped %d; want 1 and 1", lc.started.Load(), lc.stopped.Load())
	}
	if _, err := hc.Producer(ctx, "life://in?a=2&b=1"); err == nil {
		t.Fatal("a producer was handed out after Stop")
	}
}
