package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/arvenza/helix/internal/component/file"
	"github.com/arvenza/helix/internal/component/kafka"
	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
)

// The file sink writes the records through the file component, rotated.
func TestFileSink(t *testing.T) {
	dir := t.TempDir()
	hc := engine.NewContext("audit-test")
	hc.AddComponent("file", file.New(nil))
	path := filepath.Join(dir, "audit.jsonl")
	a, err := New(hc, "gw", &config.AuditConfig{Sink: "file://" + filepath.ToSlash(path), MaxFileBytes: 2000, KeepFiles: 3}, fastOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		a.Record(context.Background(), rec(fmt.Sprint("r", i), "alice"))
	}
	closeWithin(t, a, 5*time.Second)
	seen := map[string]bool{}
	for _, p := range []string{path, path + ".1", path + ".2", path + ".3"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r gateway.Record
			if err := jsonUnmarshal(l, &r); err != nil {
				t.Fatalf("%s: %v: %s", p, err, l)
			}
			seen[r.ID] = true
		}
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Errorf("40 records of ~230 bytes in files of 2000 did not rotate: %v", err)
	}
	if _, err := os.Stat(path + ".4"); err == nil {
		t.Error("more rotated files kept than keep_files")
	}
	// The newest records are all kept.
	for i := 30; i < 40; i++ {
		if !seen[fmt.Sprint("r", i)] {
			t.Errorf("record r%d missing from the files", i)
		}
	}
}

// recordFor returns the record of principal's i-th call.
func recordFor(principal string, i int) *gateway.Record {
	return rec(fmt.Sprintf("%s-%d", principal, i), principal)
}

// twoPrincipals records n calls each of alice and bob concurrently, pausing
// between calls, and calls mid when half are recorded.
func twoPrincipals(a *Auditor, n int, mid func()) {
	var wg sync.WaitGroup
	var once sync.Once
	for _, p := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if i == n/2 {
					once.Do(mid)
				}
				a.Record(context.Background(), recordFor(p, i))
				time.Sleep(200 * time.Microsecond)
			}
		}()
	}
	wg.Wait()
}

func kafkaEngine() *engine.Context {
	hc := engine.NewContext("audit-test")
	hc.AddComponent("kafka", kafka.New(kafka.Options{}))
	return hc
}

// keys reads the keys of every record on topic (waiting for at least n).
func keys(t *testing.T, brokers []string, topic string, n int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range kafkatest.Read(t, brokers, topic).WaitCount(t, n) {
		out[string(r.Key)]++
	}
	return out
}

// Kafka's brokers failing every produce request mid-run (connections cut)
// lose nothing: once they answer again, every record of both principals is on
// the topic, keyed by its id.
func TestKafkaSinkFailingMidRunLosesNothing(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	topic := kafkatest.Topic(t, brokers, "audit", 1)
	m := NewMetrics()
	o := fastOptions(t.TempDir())
	o.Metrics, o.WriteTimeout = m, 300*time.Millisecond
	a, err := New(kafkaEngine(), "gw", &config.AuditConfig{Sink: "kafka://" + topic + "?brokers=" + strings.Join(brokers, ",")}, o)
	if err != nil {
		t.Fatal(err)
	}
	var failing sync.Mutex
	down, cuts := false, 0
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		failing.Lock()
		defer failing.Unlock()
		if down {
			cuts++
			return nil, fmt.Errorf("broker down"), true // the connection is cut
		}
		return nil, nil, false
	})
	twoPrincipals(a, 150, func() {
		failing.Lock()
		down = true
		failing.Unlock()
		time.AfterFunc(500*time.Millisecond, func() {
			failing.Lock()
			down = false
			failing.Unlock()
		})
	})
	closeWithin(t, a, 30*time.Second)
	failing.Lock()
	if cuts == 0 {
		t.Error("no produce request was cut: the brokers never failed")
	}
	failing.Unlock()
	got := keys(t, brokers, topic, 300)
	for _, p := range []string{"alice", "bob"} {
		for i := range 150 {
			if got[fmt.Sprintf("%s-%d", p, i)] == 0 {
				t.Errorf("record %s-%d is not on the topic", p, i)
			}
		}
	}
}

// A Kafka cluster closed mid-run: what it acknowledged before is there; what
// it did not take is spooled at shutdown and delivered at the next start, to a
// new cluster on the same address.
func TestKafkaSinkClosedSpoolsAndNextStartDelivers(t *testing.T) {
	t.Parallel()
	port := testtools.FreePort(t)
	first, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	brokers := first.ListenAddrs()
	const topic = "audit-restart"
	sink := "kafka://" + topic + "?brokers=" + strings.Join(brokers, ",") + "&deliveryTimeout=2s"
	dir := t.TempDir()
	m := NewMetrics()
	o := fastOptions(dir)
	o.Metrics, o.WriteTimeout = m, 300*time.Millisecond
	a, err := New(kafkaEngine(), "gw", &config.AuditConfig{Sink: sink}, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		a.Record(context.Background(), recordFor("alice", i))
	}
	testtools.Eventually(t, "the first cluster acknowledged 50 records", func() bool {
		return counterValue(t, m.written.WithLabelValues("gw", "kafka")) == 50
	})
	before := keys(t, brokers, topic, 50)
	first.Close()
	for i := range 50 {
		a.Record(context.Background(), recordFor("bob", i))
	}
	closeWithin(t, a, 500*time.Millisecond)

	second, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	b, err := New(kafkaEngine(), "gw", &config.AuditConfig{Sink: sink}, fastOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	after := keys(t, brokers, topic, 50)
	closeWithin(t, b, 10*time.Second)
	for i := range 50 {
		if before[fmt.Sprint("alice-", i)] == 0 {
			t.Errorf("alice-%d was acknowledged but is not on the first cluster", i)
		}
		if after[fmt.Sprint("bob-", i)] == 0 {
			t.Errorf("bob-%d, spooled at shutdown, is not on the second cluster", i)
		}
	}
}
