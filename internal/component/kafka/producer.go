package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/tracing"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// producer sends one record per exchange and waits for its acknowledgement. Safe
// for concurrent use: franz-go batches the records of concurrent sends.
type producer struct {
	e   *endpoint
	mu  sync.RWMutex
	cl  *kgo.Client
	key string
}

var _ component.Producer = (*producer)(nil)

func (e *endpoint) CreateProducer() (component.Producer, error) {
	return &producer{e: e, key: e.opts.Key}, nil
}

// Start creates the client; franz-go connects on the first send.
func (p *producer) Start(context.Context) error {
	o := p.e.opts
	opts := append(append([]kgo.Opt(nil), p.e.base...), kgo.DefaultProduceTopic(p.e.topic), kgo.ProducerLinger(o.Linger),
		kgo.RecordDeliveryTimeout(o.DeliveryTimeout))
	switch o.Acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	}
	if !o.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if o.AutoCreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	p.mu.Lock()
	p.cl = cl
	p.mu.Unlock()
	return nil
}

// Stop waits for records still being sent (until ctx ends) and closes the client.
func (p *producer) Stop(ctx context.Context) error {
	p.mu.Lock()
	cl := p.cl
	p.cl = nil
	p.mu.Unlock()
	if cl == nil {
		return nil
	}
	err := cl.Flush(ctx)
	cl.Close()
	if err != nil {
		return fmt.Errorf("kafka producer %s: flush at stop: %w", p.e.redacted(), err)
	}
	return nil
}

// Process sends ex's body as one record and returns when the brokers acknowledged
// it (acks) — or, in a workflow triggered by kafka://, as soon as the record is
// handed to the client, the consumer then waiting for the acknowledgement before
// it commits. The exchange is left unchanged.
func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	p.mu.RLock()
	cl := p.cl
	p.mu.RUnlock()
	if cl == nil {
		return fmt.Errorf("kafka producer %s is not started", p.e.redacted())
	}
	rec, err := p.record(ex.In())
	if err == nil {
		traceRecord(ctx, rec)
		addIdempotencyKey(ctx, rec) // idempotency.go
	}
	if err != nil {
		return err
	}
	if a := acksFrom(ctx); a != nil && a.add() {
		// Inside a workflow triggered by kafka://: the consumer commits the
		// triggering record only after this send is acknowledged, so the send need
		// not be waited for here (see acks). It must outlive the step's context.
		cl.Produce(context.WithoutCancel(ctx), rec, func(_ *kgo.Record, err error) {
			if err != nil {
				err = fmt.Errorf("kafka: send to topic %s: %w", p.e.topic, err)
			}
			a.finish(err)
		})
		return nil
	}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("kafka: send to topic %s: %w", p.e.topic, err)
	}
	return nil
}

// record builds the record for m: value from the body, key from HeaderKey or the
// key option, headers from the exchange headers with string or byte values whose
// names do not start with "Helix".
func (p *producer) record(m *exchange.Message) (*kgo.Record, error) {
	value, err := encodeBody(m.Body())
	if err != nil {
		return nil, fmt.Errorf("kafka: send to topic %s: %w", p.e.topic, err)
	}
	rec := &kgo.Record{Topic: p.e.topic, Value: value}
	switch k := m.Header(HeaderKey).(type) {
	case string:
		rec.Key = []byte(k)
	case []byte:
		rec.Key = k
	case nil:
		if p.key != "" {
			rec.Key = []byte(p.key)
		}
	default:
		rec.Key = []byte(exchange.Stringify(k))
	}
	for name, v := range m.Headers() {
		if isInternal(name) {
			continue
		}
		switch v := v.(type) {
		case string:
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: name, Value: []byte(v)})
		case []byte:
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: name, Value: v})
		}
	}
	return rec, nil
}

// traceRecord puts the trace context of ctx (the step's span) into rec's
// traceparent and tracestate headers, replacing those copied from the exchange (an
// HTTP caller's, now one hop behind). Without a span in ctx — tracing off — the
// record is left as the exchange made it.
func traceRecord(ctx context.Context, rec *kgo.Record) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	rec.Headers = slices.DeleteFunc(rec.Headers, func(h kgo.RecordHeader) bool {
		return strings.EqualFold(h.Key, tracing.TraceParent) || strings.EqualFold(h.Key, tracing.TraceState)
	})
	tracing.Inject(ctx, func(k, v string) { rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)}) })
}

// isInternal reports whether an exchange header is Helix's own (the engine's and
// the components' headers all start with "Helix"); those are not sent.
func isInternal(name string) bool { return exchange.IsReservedHeader(name) }

// encodeBody turns a body into a record value: strings and bytes as they are, nil
// as no value, everything else as JSON.
func encodeBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(b), nil
	case []byte:
		return b, nil
	}
	out, err := segjson.Marshal(body)
	if err != nil {
		return nil, errors.New("the body cannot be written as JSON: " + err.Error())
	}
	return out, nil
}
