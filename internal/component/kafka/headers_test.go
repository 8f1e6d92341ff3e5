package kafka

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestConsumerDropsReservedRecordHeaders: a record header named like one of
// Helix's own headers (any letter case) never reaches the workflow, so whoever
// can write to a topic cannot choose the file a file:// step writes, the tool an
// mcp:// step calls, an agent session or an endpoint. Other headers still travel.
func TestConsumerDropsReservedRecordHeaders(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.Topic(t, brokers, "reserved", 1)
	const forged = "forged-by-the-producer"
	forgedHeaders := []string{
		"HelixFileName", "helixfilename", "HELIXMCPTOOLNAME", "HelixAgentSessionId",
		"HelixHttpUri", "HelixKafkaTopic", "HelixKafkaKey", "hElIx", "HelixTool",
	}
	rec := &kgo.Record{Topic: topic, Value: []byte("payload"), Headers: []kgo.RecordHeader{{Key: "X-Trace", Value: []byte("t1")}}}
	for _, k := range forgedHeaders {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(forged)})
	}
	kafkatest.Produce(t, brokers, rec)

	got := make(chan *exchange.Exchange, 1)
	c := New(Options{Brokers: brokers})
	cons, err := endpointFor(t, c, "kafka://"+topic+"?groupId="+topic).CreateConsumer(component.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
		got <- ex
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cons.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cons.Stop(ctx) }()
	var ex *exchange.Exchange
	select {
	case ex = <-got:
	case <-ctx.Done():
		t.Fatal("the record did not arrive")
	}
	h := ex.In().Headers()
	for k, v := range h {
		if v == forged {
			t.Errorf("record header %s=%q reached the workflow", k, v)
		}
		if strings.EqualFold(k, "helix") {
			t.Errorf("record header %q reached the workflow", k)
		}
	}
	if h["X-Trace"] != "t1" {
		t.Errorf("X-Trace = %v, want t1 (an ordinary header must still travel); headers %v", h["X-Trace"], h)
	}
	if h[HeaderTopic] != topic {
		t.Errorf("%s = %v, want %s", HeaderTopic, h[HeaderTopic], topic)
	}
	if _, ok := h[HeaderKey]; ok {
		t.Errorf("%s = %v; the record has no key", HeaderKey, h[HeaderKey])
	}
}
