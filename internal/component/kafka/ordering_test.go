package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestOrderPerPartitionConcurrencyAcross: records of one partition are processed
// one at a time in offset order, while different partitions are processed at the
// same time; maxConcurrency=1 allows one record at a time in all.
func TestOrderPerPartitionConcurrencyAcross(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		option  string
		wantMax int // the highest concurrency allowed
		wantMin int // the concurrency that must be reached
	}{
		{"one per partition", "", 4, 2},
		{"maxConcurrency=2", "&maxConcurrency=2", 2, 2},
		{"maxConcurrency=1", "&maxConcurrency=1", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const parts, each = 4, 30
			brokers := kafkatest.Brokers(t)
			topic := kafkatest.Topic(t, brokers, "order", parts)
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var recs []*kgo.Record
			for i := range each {
				for p := range int32(parts) {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d/%d", p, i)})
				}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}

			var (
				mu       sync.Mutex
				inFlight = map[int]int{} // partition → records running
				running  int
				maxRun   int
				last     = map[int]int64{}
				count    int
				problems []string
				reached  = make(chan struct{})
				once     sync.Once
			)
			done := make(chan struct{})
			proc := component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
				p := ex.In().Header(HeaderPartition).(int)
				off := ex.In().Header(HeaderOffset).(int64)
				mu.Lock()
				inFlight[p]++
				running++
				maxRun = max(maxRun, running)
				if inFlight[p] > 1 {
					problems = append(problems, fmt.Sprintf("partition %d: two records at once", p))
				}
				if prev, ok := last[p]; ok && off != prev+1 {
					problems = append(problems, fmt.Sprintf("partition %d: offset %d after %d", p, off, prev))
				}
				last[p] = off
				if running >= tc.wantMin {
					once.Do(func() { close(reached) })
				}
				mu.Unlock()
				// Hold the first records until the wanted concurrency is reached: a
				// consumer that ran partitions one by one would never get there.
				select {
				case <-reached:
				case <-time.After(10 * time.Second):
					mu.Lock()
					problems = append(problems, fmt.Sprintf("never %d records at once", tc.wantMin))
					mu.Unlock()
				}
				mu.Lock()
				inFlight[p]--
				running--
				count++
				if count == parts*each {
					close(done)
				}
				mu.Unlock()
				return nil
			})
			c := New(Options{Brokers: brokers})
			cons, err := endpointFor(t, c, "kafka://"+topic+"?groupId="+topic+tc.option).CreateConsumer(proc)
			if err != nil {
				t.Fatal(err)
			}
			if err := cons.Start(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatalf("only %d of %d records processed", count, parts*each)
			}
			if err := cons.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range problems {
				t.Error(p)
			}
			if maxRun > tc.wantMax || maxRun < tc.wantMin {
				t.Errorf("at most %d records ran at once; want between %d and %d", maxRun, tc.wantMin, tc.wantMax)
			}
			for p := range parts {
				if last[p] != each-1 {
					t.Errorf("partition %d: last offset %d, want %d", p, last[p], each-1)
				}
			}
		})
	}
}
