package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestRebalanceCommitsFinishedRecords: with periodic commits switched off in
// effect (commitInterval=1h), only the commits at revoke and Stop remain. A second
// member joining takes partitions from the first, and the first member's Stop hands
// all of them to the second; every record is still processed exactly once, so the
// records finished before each handover were committed before the partitions went.
func TestRebalanceCommitsFinishedRecords(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.Topic(t, brokers, "rebalance", 4)
	var mu sync.Mutex
	seen := map[string][]string{} // value → members that processed it
	total := 0
	member := func(name string) component.Processor {
		return component.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			mu.Lock()
			defer mu.Unlock()
			v := exchange.Stringify(ex.In().Body())
			seen[v] = append(seen[v], name)
			total++
			return nil
		})
	}
	waitTotal := func(n int) {
		t.Helper()
		testtools.Eventually(t, fmt.Sprintf("%d records processed", n), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return total >= n
		})
	}
	batch := func(from, n int) {
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "r%d", i)})
		}
		kafkatest.Produce(t, brokers, recs...)
	}
	c := New(Options{Brokers: brokers})
	raw := "kafka://" + topic + "?groupId=" + topic + "&commitInterval=1h&sessionTimeout=" + kafkatest.SessionTimeout()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := func(name string) component.Consumer {
		cons, err := endpointFor(t, c, raw).CreateConsumer(member(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := cons.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return cons
	}

	a := start("a")
	batch(0, 100)
	waitTotal(100)
	b := start("b") // takes partitions from a: a commits what it finished first
	batch(100, 100)
	waitTotal(200)
	if err := a.Stop(ctx); err != nil { // a's partitions go to b, committed
		t.Fatal(err)
	}
	batch(200, 100)
	waitTotal(300)
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for i := range 300 {
		v := fmt.Sprintf("r%d", i)
		if len(seen[v]) != 1 {
			t.Errorf("record %s processed by %v; want exactly once", v, seen[v])
		}
	}
	byB := 0
	for _, ms := range seen {
		for _, m := range ms {
			if m == "b" {
				byB++
			}
		}
	}
	if byB == 0 {
		t.Error("the second member never got a partition; the test saw no rebalance")
	}
	if total != 300 {
		t.Errorf("%d records processed, want 300", total)
	}
}
