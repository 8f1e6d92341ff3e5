// Package kafkatest gives tests a Kafka to talk to: an in-process kfake cluster
// (franz-go's fake broker), or the real brokers named by HELIX_KAFKA_BROKERS, with
// helpers to create topics, produce records and read a topic back. The kafka://
// component's own tests and the end-to-end tests of the spec's examples use it.
package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BrokersEnv names the environment variable that runs the tests against a real
// Kafka (host:port, comma-separated) instead of an in-process kfake cluster.
const BrokersEnv = "HELIX_KAFKA_BROKERS"

var topicSeq atomic.Int64

// Brokers returns the brokers of a cluster for t: the real one named by
// HELIX_KAFKA_BROKERS, or a fresh kfake cluster closed at cleanup. The kfake
// cluster accepts session timeouts down to 100ms (see [SessionTimeout]) and
// creates topics on first use.
func Brokers(t testing.TB) []string {
	t.Helper()
	if env := os.Getenv(BrokersEnv); env != "" {
		return strings.Split(env, ",")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// Topic creates a topic with n partitions under a name unique to this run.
func Topic(t testing.TB, brokers []string, prefix string, n int32) string {
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

// EnsureTopics creates the named topics (one partition each) unless they exist:
// tests that use fixed topic names, as the spec's examples do, call it so they
// also run against a real broker that does not create topics on first use.
func EnsureTopics(t testing.TB, brokers []string, names ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resps, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, names...)
	if err != nil {
		t.Fatalf("create topics %v: %v", names, err)
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			t.Fatalf("create topic %s: %v", r.Topic, r.Err)
		}
	}
}

// Produce writes records and waits for them to be acknowledged.
func Produce(t testing.TB, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0), kgo.AllowAutoTopicCreation())
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

// Reader reads a topic from its start without a group, in the background, until
// the test ends. Records arrive on C in order per partition (C is closed when the
// test ends); All returns the records read so far.
type Reader struct {
	mu   sync.Mutex
	recs []*kgo.Record
	C    chan *kgo.Record
}

// Read starts a Reader of topic.
func Read(t testing.TB, brokers []string, topic string) *Reader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{C: make(chan *kgo.Record, 100000)}
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
				r.C <- rec
			})
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
		close(r.C)
	})
	return r
}

// Next waits for the next record.
func (r *Reader) Next(t testing.TB) *kgo.Record {
	t.Helper()
	select {
	case rec := <-r.C:
		return rec
	case <-time.After(30 * time.Second):
		t.Fatal("no record arrived within 30s")
		return nil
	}
}

// WaitCount waits until the reader has seen n records and returns them.
func (r *Reader) WaitCount(t testing.TB, n int) []*kgo.Record {
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

// All returns the records read so far.
func (r *Reader) All() []*kgo.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*kgo.Record(nil), r.recs...)
}

// SessionTimeout is a short group session timeout the cluster of [Brokers]
// accepts (a real broker's minimum is usually 6s): tests that kill a group member
// use it so the group moves on quickly.
func SessionTimeout() string {
	if os.Getenv(BrokersEnv) != "" {
		return "6s"
	}
	return "1s"
}
