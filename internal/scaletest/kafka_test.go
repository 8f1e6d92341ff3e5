package scaletest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/testtools"
)

const (
	kafkaPartitions  = 6
	keysPerPartition = 2
	// commitInterval of the consumer: a killed replica's records finished in the
	// last commitInterval are processed again by the next owner.
	kafkaCommitInterval = 100 * time.Millisecond
)

// kafkaReplicaYAML: every replica consumes the input topic in one group and
// writes, for each record, what it processed and who did it to the output topic
// (one partition, so its order is the order in which the effects happened).
const kafkaReplicaYAML = `helix:
  name: scale-kafka
  management:
    addr: ${env:HELIX_TEST_MGMT}
  kafka:
    brokers: [%[1]s]
workflows:
  - id: consume
    trigger:
      uri: kafka://%[2]s?groupId=%[2]s-group&sessionTimeout=%[4]s&commitInterval=%[5]s
    steps:
      - set-header: {name: X-Replica, constant: "${env:HELIX_TEST_REPLICA}"}
      - transform:
          starlang: |
            {"key": header("HelixKafkaKey"), "seq": payload["seq"], "partition": header("HelixKafkaPartition"),
             "offset": header("HelixKafkaOffset"), "replica": header("X-Replica")}
      - target: kafka://%[3]s
`

// produced is a record of the input topic as the broker acknowledged it.
type produced struct {
	key string
	seq int
}

// effect is one output record: a record of the input topic processed by replica.
type effect struct {
	Key       string      `json:"key"`
	Seq       int         `json:"seq"`
	Partition json.Number `json:"partition"`
	Offset    json.Number `json:"offset"`
	Replica   string      `json:"replica"`
	at        time.Time   // when the replica sent it (the output record's timestamp)
}

func (e effect) position() (int32, int64) {
	p, _ := e.Partition.Int64()
	o, _ := e.Offset.Int64()
	return int32(p), o
}

// producer writes keysPerPartition keys to every partition of topic, each key's
// records numbered from 0, a round every interval, until stopped; it keeps what
// the broker acknowledged, by partition and offset.
type producer struct {
	mu   sync.Mutex
	recs map[int32]map[int64]produced
	wg   sync.WaitGroup
	stop context.CancelFunc
}

func startProducer(t *testing.T, brokers []string, topic string, interval time.Duration) *producer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &producer{recs: map[int32]map[int64]produced{}, stop: stop}
	p.wg.Go(func() {
		defer cl.Close()
		for seq := 0; ctx.Err() == nil; seq++ {
			var batch []*kgo.Record
			for part := range int32(kafkaPartitions) {
				for k := range keysPerPartition {
					batch = append(batch, &kgo.Record{Topic: topic, Partition: part, Key: fmt.Appendf(nil, "p%d-k%d", part, k),
						Value: fmt.Appendf(nil, `{"seq": %d}`, seq)})
				}
			}
			// Not ctx: a round is written whole, so every key's records stay numbered
			// without gaps.
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			results := cl.ProduceSync(sctx, batch...)
			cancel()
			if err := results.FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			p.mu.Lock()
			for _, r := range results {
				if p.recs[r.Record.Partition] == nil {
					p.recs[r.Record.Partition] = map[int64]produced{}
				}
				p.recs[r.Record.Partition][r.Record.Offset] = produced{key: string(r.Record.Key), seq: seq}
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	})
	return p
}

// finish stops producing and returns the records written.
func (p *producer) finish() map[int32]map[int64]produced {
	p.stop()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.recs
}

// effectLog decodes the output topic's records as they arrive.
type effectLog struct {
	t      *testing.T
	reader *kafkatest.Reader
	got    []effect
}

// all returns the effects so far, in the order they happened.
func (l *effectLog) all() []effect {
	l.t.Helper()
	recs := l.reader.All()
	for _, rec := range recs[len(l.got):] {
		var e effect
		if err := json.Unmarshal(rec.Value, &e); err != nil {
			l.t.Fatalf("output record %q: %v", rec.Value, err)
		}
		e.at = rec.Timestamp
		l.got = append(l.got, e)
	}
	return l.got
}

// run is a stretch of one partition's records processed by one replica, offsets
// first..last without a gap.
type run struct {
	replica     string
	first, last int64
	start       time.Time // when its first record was processed
}

// runsOf splits the effects on each partition, in the order they happened,
// into runs; a new run starts where the replica changes or the offset does not
// follow the one before.
func runsOf(es []effect) map[int32][]run {
	out := map[int32][]run{}
	for _, e := range es {
		p, o := e.position()
		rs := out[p]
		if n := len(rs); n > 0 && rs[n-1].replica == e.Replica && rs[n-1].last+1 == o {
			rs[n-1].last = o
			continue
		}
		out[p] = append(rs, run{replica: e.Replica, first: o, last: o, start: e.at})
	}
	return out
}

// TestKafkaGroupOfThreeReplicas: three helix processes consume one 6-partition
// topic in one consumer group, each writing every record it processed (with the
// partition, offset and its name) to an output topic, while the test produces
// keyed, numbered records. One replica is killed with SIGKILL mid-stream and the
// producing goes on. Then:
//
//   - every record was processed at least once, with its own key and number;
//   - order per partition holds: cut each partition's effects, in the order they
//     happened, into runs (one replica, offsets without a gap); the first run
//     starts at offset 0, the last ends at the last record, and each run starts
//     at most one past the previous run's end and not before its start — a
//     replica never skips or reorders records, and what is processed twice is the
//     tail of what the previous owner did, never older records. A run that goes
//     back starts a new owner's work: one replica never repeats itself. Per key,
//     first occurrences come in number order;
//   - the killed replica's partitions were taken over by the others.
//
// It logs the figures docs/scaling.md reports: the time from the kill to the
// first record of a taken-over partition, and the records processed twice.
func TestKafkaGroupOfThreeReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three helix processes")
	}
	brokers := kafkatest.Brokers(t)
	in := kafkatest.Topic(t, brokers, "scale-in", kafkaPartitions)
	out := kafkatest.Topic(t, brokers, "scale-out", 1)
	output := &effectLog{t: t, reader: kafkatest.Read(t, brokers, out)}
	file := writeFile(t, "helix.yaml", fmt.Sprintf(kafkaReplicaYAML, strings.Join(brokers, ", "), in, out, kafkatest.SessionTimeout(), kafkaCommitInterval))
	var replicas []*testtools.Replica
	for _, name := range []string{"r1", "r2", "r3"} {
		replicas = append(replicas, testtools.StartReplica(t, name, []string{file}))
	}
	testtools.WaitReady(t, 90*time.Second, replicas...)
	producing := time.Now()
	prod := startProducer(t, brokers, in, 40*time.Millisecond)
	defer prod.finish()

	// All three share the partitions (the group has settled) once each has
	// processed records.
	testtools.WaitFor(t, 90*time.Second, "every replica processes records", func() bool {
		n := map[string]int{}
		for _, e := range output.all() {
			n[e.Replica]++
		}
		return n["r1"] >= 20 && n["r2"] >= 20 && n["r3"] >= 20
	})
	time.Sleep(500 * time.Millisecond)
	victim := replicas[1]
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kill := time.Now()
	_ = victim.Wait()
	// Who owned which partition at the kill: the replica of its last effect
	// before it (read a moment later, when the output topic has it).
	time.Sleep(300 * time.Millisecond)
	owner := map[int32]string{}
	for _, e := range output.all() {
		if p, _ := e.position(); e.at.Before(kill) {
			owner[p] = e.Replica
		}
	}
	var taken []int32
	for p, r := range owner {
		if r == victim.Name {
			taken = append(taken, p)
		}
	}
	slices.Sort(taken)
	if len(taken) == 0 {
		t.Fatalf("the killed %s owned no partition (owners %v)", victim.Name, owner)
	}
	// Records go on arriving for the survivors to take over.
	testtools.WaitFor(t, 60*time.Second, "the survivors take over "+victim.Name+"'s partitions", func() bool {
		after := map[int32]bool{}
		for _, e := range output.all() {
			if p, _ := e.position(); e.Replica != victim.Name && owner[p] == victim.Name && e.at.After(kill) {
				after[p] = true
			}
		}
		return len(after) == len(taken)
	})
	time.Sleep(time.Second)
	recs := prod.finish()
	total := 0
	for _, offs := range recs {
		total += len(offs)
	}
	testtools.WaitFor(t, 60*time.Second, "every record processed", func() bool {
		seen := map[[2]int64]bool{}
		for _, e := range output.all() {
			p, o := e.position()
			seen[[2]int64{int64(p), o}] = true
		}
		return len(seen) >= total
	})
	time.Sleep(500 * time.Millisecond) // late duplicates, if any, are counted too
	es := output.all()

	// Every effect is of a record produced, with its key and number.
	for _, e := range es {
		p, o := e.position()
		want, ok := recs[p][o]
		if !ok || want.key != e.Key || want.seq != e.Seq {
			t.Errorf("effect %+v: produced at %d/%d was %+v (found %v)", e, p, o, want, ok)
		}
	}
	rebalance := time.Duration(0)
	reprocessed := 0
	runs := runsOf(es)
	for p := range int32(kafkaPartitions) {
		rs := runs[p]
		last := int64(len(recs[p]) - 1)
		if len(rs) == 0 || rs[0].first != 0 || rs[len(rs)-1].last != last {
			t.Errorf("partition %d: runs %+v; want from offset 0 to %d", p, rs, last)
			continue
		}
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			switch {
			case cur.first > prev.last+1:
				t.Errorf("partition %d: %s went on at offset %d after %s's %d: records skipped", p, cur.replica, cur.first, prev.replica, prev.last)
			case cur.first < prev.first:
				t.Errorf("partition %d: %s went back to offset %d, before %s's run %d..%d", p, cur.replica, cur.first, prev.replica, prev.first, prev.last)
			case cur.first <= prev.last && cur.replica == prev.replica:
				t.Errorf("partition %d: %s processed offsets %d..%d again itself", p, cur.replica, cur.first, prev.last)
			}
			if cur.first <= prev.last {
				n := int(prev.last - cur.first + 1)
				reprocessed += n
				t.Logf("partition %d: %s processed again %d records of %s (offsets %d..%d)", p, cur.replica, n, prev.replica, cur.first, prev.last)
			}
			if prev.replica == victim.Name && slices.Contains(taken, p) && cur.start.After(kill) {
				rebalance = max(rebalance, cur.start.Sub(kill))
			}
		}
	}
	// Per key, first occurrences in number order.
	next := map[string]int{}
	for _, e := range es {
		switch n := next[e.Key]; {
		case e.Seq == n:
			next[e.Key]++
		case e.Seq > n:
			t.Errorf("key %s: record %d processed before %d", e.Key, e.Seq, n)
		}
	}
	t.Logf("%d records on %d partitions, %d processed (%d twice); %s (partitions %v) killed %v after the start of producing; "+
		"its partitions' records resumed on the others %v after the kill (sessionTimeout %s, commitInterval %v)",
		total, kafkaPartitions, len(es), reprocessed, victim.Name, taken, kill.Sub(producing).Round(time.Millisecond), rebalance.Round(time.Millisecond),
		kafkatest.SessionTimeout(), kafkaCommitInterval)
	if len(es) != total+reprocessed {
		t.Errorf("%d effects for %d records and %d reprocessed", len(es), total, reprocessed)
	}
}
