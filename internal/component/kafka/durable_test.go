package kafka

import (
	"context"
	"testing"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// A record's run id is its topic, partition and offset, whatever other keys
// the exchange has.
func TestRecordNamesItsDurableRun(t *testing.T) {
	t.Parallel()
	ex := exchange.New(exchange.InOnly)
	ex.In().SetHeader(HeaderTopic, "orders")
	ex.In().SetHeader(HeaderPartition, 3)
	ex.In().SetHeader(HeaderOffset, int64(42))
	ex.In().SetHeader("Idempotency-Key", "other")
	if id := durable.RunIDFrom(context.Background(), "wf", ex); id != "wf:orders/3/42" {
		t.Fatalf("run id %q", id)
	}
	if id := durable.RunIDFrom(context.Background(), "wf", exchange.New(exchange.InOnly)); id != "" {
		t.Fatalf("no key: %q", id)
	}
}
