package kafka_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/exchange"
)

// benchScript is the transform of the benchmark, in Helix's YAML and in the plain
// loop alike.
const benchScript = `{"id": payload["id"], "doubled": payload["id"] * 2, "note": "seen"}`

const benchPartitions = 4

// BenchmarkConsumeTransformProduce moves b.N JSON records from one topic to another
// through a Starlang transform, on an in-process kfake cluster (or HELIX_KAFKA_BROKERS):
//
//   - helix: a YAML workflow, kafka:// trigger → transform → kafka:// target, at
//     least once (a record's offset is committed after its workflow finished);
//   - limit: a plain franz-go loop doing the same with the same compiled Starlang
//     script, run as the transform step runs it (EvalValue), and the same JSON
//     library (segmentio/encoding, as the component): poll, transform every
//     record, produce them all asynchronously, flush, commit — also at least
//     once. limit takes every record a poll has; limit_batchN polls at most N
//     records at a time, so it flushes and commits every N records (the batch
//     sizes of a loop that bounds its work in flight).
//
// It reports records/s and the process's CPU time per record (user+system, from
// getrusage, the in-process broker's share included in both). Run it with a fixed
// count so both move the same records:
//
//	go test ./internal/component/kafka -run '^$' -bench ConsumeTransformProduce -benchtime 20000x -count 3
func BenchmarkConsumeTransformProduce(b *testing.B) {
	b.Run("limit", func(b *testing.B) { benchMove(b, limitLoop(0)) })
	b.Run("helix", func(b *testing.B) { benchMove(b, runHelix) })
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("limit_batch%d", n), func(b *testing.B) { benchMove(b, limitLoop(n)) })
	}
}

// benchMove prepares b.N records, runs mover until they all reached the output,
// and reports the rates.
func benchMove(b *testing.B, mover func(b *testing.B, brokers []string, in, out string) (stop func())) {
	brokers := kafkatest.Brokers(b)
	in := kafkatest.Topic(b, brokers, "bench-in", benchPartitions)
	out := kafkatest.Topic(b, brokers, "bench-out", benchPartitions)
	recs := make([]*kgo.Record, b.N)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"id": %d, "text": "a support ticket of ordinary length"}`, i)}
	}
	kafkatest.Produce(b, brokers, recs...)
	arrived, stopCount := countRecords(b, brokers, out)
	defer stopCount()

	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	stop := mover(b, brokers, in, out)
	for arrived.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/record")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countRecords counts the records arriving on topic.
func countRecords(b *testing.B, brokers []string, topic string) (*atomic.Int64, func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			n.Add(int64(fs.NumRecords()))
		}
	}()
	return &n, func() { cancel(); <-done; cl.Close() }
}

func runHelix(b *testing.B, brokers []string, in, out string) func() {
	yaml := fmt.Sprintf(`
workflows:
  - id: move
    trigger:
      uri: kafka://%s?groupId=%s-helix
    steps:
      - transform:
          starlang: |
            %s
      - target: kafka://%s
`, in, in, benchScript, out)
	a, _, err := loadApp([]string{writeFileB(b, "helix.yaml", yaml), writeFileB(b, "brokers.yaml", brokersYAML(brokers))})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	}
}

// limitLoop returns the plain loop that polls at most batch records at a time
// (0: every record a poll has).
func limitLoop(batch int) func(b *testing.B, brokers []string, in, out string) func() {
	return func(b *testing.B, brokers []string, in, out string) func() {
		return runLimit(b, brokers, in, out, batch)
	}
}

func runLimit(b *testing.B, brokers []string, in, out string, batch int) func() {
	script, err := starlang.Compile("bench", 1, 1, benchScript, nil)
	if err != nil {
		b.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(in+"-limit"), kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var fs kgo.Fetches
			if batch > 0 {
				fs = cl.PollRecords(ctx, batch)
			} else {
				fs = cl.PollFetches(ctx)
			}
			if ctx.Err() != nil {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				var v any
				if _, err := segjson.Parse(r.Value, &v, segjson.UseInt64|segjson.UseNumber); err != nil {
					b.Error(err)
					return
				}
				res, err := script.EvalValue(ctx, exchange.NewWithBody(exchange.InOnly, v))
				if err != nil {
					b.Error(err)
					return
				}
				value, _ := segjson.Marshal(res.Value)
				cl.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: value}, nil)
			})
			if err := cl.Flush(ctx); err != nil {
				return
			}
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				b.Error(err)
			}
		}
	}()
	return func() { cancel(); <-done; cl.Close() }
}

func writeFileB(b *testing.B, name, text string) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}
