package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// A record sent in a durable run's step carries the step's idempotency key as
// the Helix-Idempotency-Key header; a record sent outside one carries none.
func TestRecordCarriesIdempotencyKey(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.Topic(t, brokers, "idem", 1)
	c := New(Options{Brokers: brokers})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := endpointFor(t, c, "kafka://"+topic).CreateProducer()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(ctx)
	if err := p.Process(durable.WithKey(ctx, "run-3/1/0"), exchange.NewWithBody(exchange.InOnly, "keyed")); err != nil {
		t.Fatal(err)
	}
	if err := p.Process(ctx, exchange.NewWithBody(exchange.InOnly, "plain")); err != nil {
		t.Fatal(err)
	}
	recs := kafkatest.Read(t, brokers, topic).WaitCount(t, 2)
	keys := map[string][]string{}
	for _, r := range recs {
		for _, h := range r.Headers {
			if h.Key == HeaderIdempotencyKey {
				keys[string(r.Value)] = append(keys[string(r.Value)], string(h.Value))
			}
		}
	}
	if got := keys["keyed"]; len(got) != 1 || got[0] != "run-3/1/0" {
		t.Errorf("keyed record: idempotency key headers %q", got)
	}
	if got := keys["plain"]; len(got) != 0 {
		t.Errorf("record outside a durable run carries %q", got)
	}
}
