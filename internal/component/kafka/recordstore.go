package kafka

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/recordstore"
	"github.com/arvenza/helix/pkg/uri"
)

var _ recordstore.Opener = (*Component)(nil)

// OpenRecordStore opens a topic for records (an audit trail) with the options of
// a kafka:// target (brokers, SASL, TLS, acks, idempotent …): each record is one
// Kafka record whose key is the record's id and whose value is its JSON. Write
// returns when the brokers acknowledged the whole batch; a batch sent again after
// a failure may put a record on the topic twice (same key): consumers, or a
// compacted topic, keep it once.
func (c *Component) OpenRecordStore(u *uri.URI, _ recordstore.Options) (recordstore.Store, error) {
	ep, err := c.CreateEndpoint(u)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Spec.Redact(u.Raw), err)
	}
	// The client is made at the first Write: opening a store only checks the
	// URI, so that validating a configuration starts nothing.
	return &recordTopic{p: &producer{e: ep.(*endpoint)}}, nil
}

type recordTopic struct {
	p *producer
	// pending is closed when every record of the last batch has its answer. A
	// Write whose context ended leaves its records with the client (franz-go
	// does not take back a buffered record); the next Write waits for them
	// first, so abandoned records never pile up while the brokers are away.
	pending chan struct{}
	closed  bool
}

func (t *recordTopic) Write(ctx context.Context, recs []recordstore.Record) error {
	if t.closed {
		return fmt.Errorf("kafka %s: the record store is closed", t.p.e.redacted())
	}
	t.p.mu.RLock()
	cl := t.p.cl
	t.p.mu.RUnlock()
	if cl == nil {
		if err := t.p.Start(ctx); err != nil {
			return err
		}
		t.p.mu.RLock()
		cl = t.p.cl
		t.p.mu.RUnlock()
	}
	if t.pending != nil {
		select {
		case <-t.pending:
		case <-ctx.Done():
			return fmt.Errorf("kafka: send to topic %s: the records of an earlier write are not acknowledged yet: %w", t.p.e.topic, ctx.Err())
		}
	}
	done := make(chan struct{})
	t.pending = done
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	wg.Add(len(recs))
	for _, r := range recs {
		rec := &kgo.Record{Topic: t.p.e.topic, Key: []byte(r.ID), Value: r.JSON}
		cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("kafka: send to topic %s: %w", t.p.e.topic, ctx.Err())
	}
	if firstErr != nil {
		return fmt.Errorf("kafka: send to topic %s: %w", t.p.e.topic, firstErr)
	}
	return nil
}

func (t *recordTopic) Close(ctx context.Context) error {
	t.closed = true
	return t.p.Stop(ctx)
}
