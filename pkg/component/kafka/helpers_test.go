package kafka

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BrokersEnv names the environment variable that runs the tests against a real
// Kafka (host:port, comma-separated) instead of an in-process kfake cluster.
const BrokersEnv = "HELIX_KAFKA_BROKERS"

var topicSeq atomic.Int64

// testBrokers returns the brokers of a cluster for t: the real one named by
// HELIX_KAFKA_BROKERS, or a fresh kfake cluster closed at cleanup.
func testBrokers(t testing.TB) []string {
	t.Helper()
	if env := os.Getenv(BrokersEnv); env != "" {
		return strings.Split(env, ",")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// newTopic creates a topic with n partitions under a name unique to this run.
func newTopic(t testing.TB, brokers []string, prefix string, n int32) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, topicSeq.Add(1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, n, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return name
}

// produce writes records and waits for them to be acknowledged.
func produce(t testing.TB, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// reader reads a topic from its start without a group, in the background, until
// the test ends.
type reader struct {
	mu   sync.Mutex
	recs []*kgo.Record
	ch   chan *kgo.Record
}

func readTopic(t testing.TB, brokers []string, topic string) *reader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{ch: make(chan *kgo.Record, 100000)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(rec *kgo.Record) {
				r.mu.Lock()
				r.recs = append(r.recs, rec)
				r.mu.Unlock()
				r.ch <- rec
			})
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return r
}

// next waits for the next record.
func (r *reader) next(t testing.TB) *kgo.Record {
	t.Helper()
	select {
	case rec := <-r.ch:
		return rec
	case <-time.After(30 * time.Second):
		t.Fatal("no record arrived within 30s")
		return nil
	}
}

// waitCount waits until the reader has seen n records and returns them.
func (r *reader) waitCount(t testing.TB, n int) []*kgo.Record {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r.mu.Lock()
		got := len(r.recs)
		out := append([]*kgo.Record(nil), r.recs...)
		r.mu.Unlock()
		if got >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d records arrived within 60s", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
