package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// consumer is a consumer-group member feeding one workflow.
//
// One poll loop fetches records and hands each partition's records to that
// partition's worker goroutine, which runs them through the processor one after
// another. A finished record is marked for commit, in offset order, once the
// records the workflow sent to kafka:// targets are acknowledged (see acks): by
// the worker itself when nothing before it waits, otherwise it joins the
// partition's queue, which the marker goroutine empties as acknowledgements
// arrive. franz-go commits the marked offsets
// every commitInterval (AutoCommitMarks). The client is created with
// BlockRebalanceOnPoll, so a rebalance waits until the poll loop has handed the
// fetched records over; the revoke callback then stops the workers of the revoked
// partitions (each finishes the record it is running and its marker waits for the
// acknowledgements), commits what they finished, and only then lets the partitions
// go. Stop does the same for every partition.
type consumer struct {
	e      *endpoint
	p      component.Processor
	group  string
	format string
	limit  int // maxConcurrency; 0 = one per partition

	sem chan struct{} // nil without a limit

	mu      sync.Mutex
	cl      *kgo.Client
	workers map[topicPartition]*worker
	// markCommit marks records for commit: cl.MarkCommitRecords (a test's
	// recorder in the tests of the marking order).
	markCommit func(...*kgo.Record)
	started    bool
	stopped    bool

	// runCtx is the processing context: cancelled when Stop's deadline passes,
	// never by Stop itself, so in-flight records can finish.
	runCtx    context.Context
	cancelRun context.CancelFunc
	// pollCtx ends the poll loop (Stop).
	pollCtx    context.Context
	cancelPoll context.CancelFunc
	loops      sync.WaitGroup // the poll loop and the broker check
}

type topicPartition struct {
	topic     string
	partition int32
}

// worker runs one partition's records in order. Finished records are marked for
// commit in offset order once the records they sent are acknowledged: at once
// by the worker when none before them waits, else by its marker goroutine.
type worker struct {
	recs chan []*kgo.Record
	quit chan struct{}
	once sync.Once
	done chan struct{} // closed when the worker and its marker ended

	// wake (capacity 1) tells the marker to look at the queue: a send was
	// acknowledged, a record joined an empty queue, or the worker ended. Many
	// acknowledgements of one produce response wake it once.
	wake chan struct{}
	// space (capacity 1) tells a worker waiting for room in a full queue that
	// the marker took records out.
	space chan struct{}

	mu      sync.Mutex
	queue   []pendingRecord // finished records waiting to be marked, in offset order
	stopped bool            // the worker ended: the marker empties the queue and ends
}

// pendingRecord is a finished record and the acknowledgements it waits for.
type pendingRecord struct {
	r *kgo.Record
	a *acks
}

func newWorker() *worker {
	return &worker{recs: make(chan []*kgo.Record, 4), quit: make(chan struct{}), done: make(chan struct{}),
		wake: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// roomMade tells a worker waiting for room in its queue to look again.
func (w *worker) roomMade() {
	select {
	case w.space <- struct{}{}:
	default:
	}
}

func (w *worker) notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// maxPendingPerPartition bounds the records of one partition that finished but
// wait for their sends' acknowledgements.
const maxPendingPerPartition = 1024

func (w *worker) stop() { w.once.Do(func() { close(w.quit) }) }

var _ component.Consumer = (*consumer)(nil)

func (e *endpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	group := e.opts.GroupID
	if group == "" {
		group = "helix-" + e.topic
	}
	return &consumer{e: e, p: p, group: group, format: e.opts.ValueFormat, limit: int(e.opts.MaxConcurrency)}, nil
}

func (c *consumer) logger() *slog.Logger { return c.e.c.logger() }

// Start creates the client and joins the group; records flow once the group has
// assigned partitions.
func (c *consumer) Start(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("kafka: the consumer is already started")
	}
	o := c.e.opts
	reset := kgo.NewOffset().AtStart()
	if o.AutoOffsetReset == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	opts := append(append([]kgo.Opt(nil), c.e.base...),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.e.topic),
		kgo.ConsumeResetOffset(reset),
		kgo.SessionTimeout(o.SessionTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, o.SessionTimeout/3)),
		// Only marked offsets — of records the workflow finished — are ever
		// committed: every commitInterval by franz-go, and at revoke and Stop by
		// us. (franz-go refuses DisableAutoCommit together with AutoCommitMarks.)
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(o.CommitInterval),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.assigned),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.lost),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	c.cl = cl
	c.markCommit = cl.MarkCommitRecords
	c.workers = map[topicPartition]*worker{}
	if c.limit > 0 {
		c.sem = make(chan struct{}, c.limit)
	}
	c.runCtx, c.cancelRun = context.WithCancel(context.Background())
	c.pollCtx, c.cancelPoll = context.WithCancel(context.Background())
	c.started = true
	c.loops.Add(2)
	go c.pollLoop()
	go c.checkBrokers()
	return nil
}

// pollLoop fetches records and hands them to the partitions' workers.
func (c *consumer) pollLoop() {
	defer c.loops.Done()
	for {
		fetches := c.cl.PollFetches(c.pollCtx)
		if c.pollCtx.Err() != nil || fetches.IsClientClosed() {
			c.cl.AllowRebalance()
			return
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			if !errors.Is(err, context.Canceled) {
				c.logger().Warn("kafka fetch failed", "uri", c.e.redacted(), "topic", topic, "partition", partition, "error", err)
			}
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			c.mu.Lock()
			w := c.workers[topicPartition{p.Topic, p.Partition}]
			c.mu.Unlock()
			if w == nil {
				return // not ours any more: the partition's next owner reads them from the committed offset
			}
			select {
			case w.recs <- p.Records:
			case <-w.quit:
			case <-c.pollCtx.Done():
			}
		})
		c.cl.AllowRebalance()
	}
}

// checkBrokers warns once when no broker answers within brokerCheckTimeout of
// Start: a consumer otherwise waits silently, retrying, for brokers that may be
// misspelled. It does not fail Start, since a broker that comes up later is served.
func (c *consumer) checkBrokers() {
	defer c.loops.Done()
	ctx, cancel := context.WithTimeout(c.pollCtx, brokerCheckTimeout)
	defer cancel()
	if err := c.cl.Ping(ctx); err != nil && c.pollCtx.Err() == nil {
		c.logger().Warn("kafka brokers do not answer; the consumer keeps trying", "uri", c.e.redacted(), "group", c.group, "error", err)
	}
}

// brokerCheckTimeout bounds the broker check of checkBrokers.
const brokerCheckTimeout = 10 * time.Second

// commit commits the marked offsets.
func (c *consumer) commit(ctx context.Context, why string) {
	if err := c.cl.CommitMarkedOffsets(ctx); err != nil && !errors.Is(err, context.Canceled) {
		c.logger().Warn("kafka commit failed; the records since the last commit will be delivered again", "uri", c.e.redacted(), "group", c.group, "when", why, "error", err)
	}
}

func (c *consumer) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, parts := range m {
		for _, p := range parts {
			tp := topicPartition{topic, p}
			if c.workers[tp] != nil {
				continue
			}
			w := newWorker()
			c.workers[tp] = w
			marked := make(chan struct{})
			go c.mark(w, marked)
			go c.work(w, marked)
		}
	}
}

// revoked lets partitions go after their records in flight finished and were
// committed.
func (c *consumer) revoked(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	c.stopWorkers(m)
	c.commit(ctx, "revoke")
}

// lost drops partitions the group already gave to others: committing would fail.
func (c *consumer) lost(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	c.stopWorkers(m)
}

// stopWorkers stops the workers of m (all workers when m is nil) and waits for them.
func (c *consumer) stopWorkers(m map[string][]int32) {
	c.mu.Lock()
	var ws []*worker
	for tp, w := range c.workers {
		if m != nil && !contains(m[tp.topic], tp.partition) {
			continue
		}
		w.stop()
		ws = append(ws, w)
		delete(c.workers, tp)
	}
	c.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}

func contains(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// work runs a partition's records in offset order until the worker is stopped.
// A stopped worker finishes the record it is running; the records it did not
// start are neither processed nor committed, so the partition's next owner (or
// this group after a restart) reads them again. Each finished record is marked
// for commit once the records it sent are acknowledged (see finished).
func (c *consumer) work(w *worker, marked <-chan struct{}) {
	defer func() {
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		w.notify()
		<-marked
		close(w.done)
	}()
	for {
		select {
		case <-w.quit:
			return
		case batch := <-w.recs:
			for _, r := range batch {
				select {
				case <-w.quit:
					return
				default:
				}
				a := &acks{w: w}
				if !c.handle(r, a) {
					return
				}
				if !c.finished(w, pendingRecord{r, a}) {
					return
				}
			}
		}
	}
}

// finished marks p's record for commit when nothing before it waits and its
// sends are acknowledged, and queues it for the marker otherwise. It waits while
// the queue is full, and reports false when the stop deadline passed.
func (c *consumer) finished(w *worker, p pendingRecord) bool {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 && p.a.succeeded() {
			// Every record before it is marked: mark it here, without a hand-over.
			c.markCommit(p.r)
			w.mu.Unlock()
			return true
		}
		if len(w.queue) < maxPendingPerPartition {
			w.queue = append(w.queue, p)
			first := len(w.queue) == 1
			w.mu.Unlock()
			if first {
				// Its own acknowledgement may have come before it was queued.
				w.notify()
			}
			return true
		}
		w.mu.Unlock()
		select {
		case <-w.space:
		case <-c.runCtx.Done():
			return false
		}
	}
}

// mark marks queued records for commit in offset order, each once its sends
// are acknowledged, until the worker ended and its queue is empty. A record
// whose asynchronous send failed runs through the workflow once more with
// synchronous sends, so that the failure reaches the workflow's error handler as
// any other failure does; its offset is committed after that.
func (c *consumer) mark(w *worker, marked chan<- struct{}) {
	defer close(marked)
	for {
		select {
		case <-w.wake:
		case <-c.runCtx.Done():
			return // past the stop deadline: what waits is not committed
		}
		for {
			failed, ended := c.markReady(w)
			if failed == nil {
				if ended {
					return
				}
				break
			}
			// The failed record stays at the head of the queue while it runs
			// again, so that nothing after it is marked before it is.
			c.logger().Warn("kafka record's send failed after the workflow finished; running the record again with synchronous sends",
				"uri", c.e.redacted(), "topic", failed.r.Topic, "partition", failed.r.Partition, "offset", failed.r.Offset, "error", failed.a.failed())
			if !c.handle(failed.r, nil) {
				return
			}
			w.mu.Lock()
			c.markCommit(failed.r)
			w.queue = w.queue[1:]
			w.mu.Unlock()
			w.roomMade()
		}
	}
}

// markReady marks the queue's leading records whose sends are all acknowledged
// and takes them out. It returns the record at the head whose send failed, if
// any (left in the queue), and whether the worker ended with nothing left.
func (c *consumer) markReady(w *worker) (failed *pendingRecord, ended bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := 0
	for ; k < len(w.queue); k++ {
		p := &w.queue[k]
		if !p.a.complete() {
			break
		}
		if p.a.failed() != nil {
			failed = &pendingRecord{p.r, p.a}
			break
		}
	}
	if k > 0 {
		c.markCommit(w.queue[k-1].r) // marks every record before it, too
		w.queue = w.queue[k:]
		if len(w.queue) == 0 {
			w.queue = nil // let the backing array go
		}
		w.roomMade()
	}
	return failed, w.stopped && len(w.queue) == 0
}

// handle runs one record through the processor. It reports whether the record is
// finished — processed, or failed and left to the workflow's error handler — and
// so may be committed; a record whose processing was cancelled (Stop's deadline)
// is not.
//
// With a non-nil a, kafka:// targets reached while processing send without
// waiting for the acknowledgement and register it with a instead (see acks).
func (c *consumer) handle(r *kgo.Record, a *acks) bool {
	if c.sem != nil {
		select {
		case c.sem <- struct{}{}:
			defer func() { <-c.sem }()
		case <-c.runCtx.Done():
			return false
		}
	}
	ex := exchange.NewWithBody(exchange.InOnly, decodeValue(r.Value, c.format))
	m := ex.In()
	for _, h := range r.Headers {
		// A record header must never pass for one of Helix's own (HelixFileName,
		// HelixMcpToolName, HelixKafkaKey …): whoever writes to the topic would
		// choose files, tools, sessions or endpoints.
		m.SetInboundHeader(h.Key, string(h.Value))
	}
	if r.Key != nil {
		m.SetHeader(HeaderKey, string(r.Key))
	}
	m.SetHeader(HeaderTopic, r.Topic)
	m.SetHeader(HeaderPartition, int(r.Partition))
	m.SetHeader(HeaderOffset, r.Offset)
	m.SetHeader(HeaderTimestamp, r.Timestamp.UTC().Format(time.RFC3339Nano))
	ctx := c.runCtx
	if a != nil {
		ctx = context.WithValue(ctx, acksKey{}, a)
	}
	err := c.p.Process(ctx, ex)
	if a != nil {
		a.seal()
	}
	if err == nil {
		return true
	}
	if c.runCtx.Err() != nil {
		return false
	}
	// The workflow's error handler (redeliveries, dead letter channel) has run; the
	// error still reaching us is the record's final outcome. It is committed, so one
	// bad record does not block its partition, and logged, so it is not silent.
	c.logger().Error("kafka record failed; its offset is committed (the workflow's error handler and dead letter channel had their turn)",
		"uri", c.e.redacted(), "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "exchange", ex.ID(), "error", err)
	return true
}

// decodeValue turns a record value into a body (see the valueFormat option).
func decodeValue(v []byte, format string) any {
	switch format {
	case "bytes":
		return v
	case "string":
		return string(v)
	}
	if v == nil {
		return nil
	}
	if first := firstNonSpace(v); first == '{' || first == '[' {
		// Integers become int64 (json.Number beyond it), so ids keep their exact
		// value through Starlang and back out as JSON — as tool:// inputs do.
		var out any
		if rest, err := segjson.Parse(v, &out, segjson.UseInt64|segjson.UseNumber); err == nil && len(bytes.TrimSpace(rest)) == 0 {
			return out
		}
	}
	if utf8.Valid(v) {
		return string(v)
	}
	return v
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// Stop leaves the group cleanly: no new records are handed out, the records in
// flight finish (until ctx's deadline; then they are cancelled and not
// committed), the finished ones are committed, and the client closes.
func (c *consumer) Stop(ctx context.Context) error {
	c.mu.Lock()
	if !c.started || c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	c.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, stopTimeout)
		defer cancel()
	}
	c.cancelPoll()
	c.loops.Wait()
	drained := make(chan struct{})
	go func() {
		c.stopWorkers(nil)
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		c.cancelRun()
		<-drained
		err = fmt.Errorf("kafka consumer %s: records in flight were cancelled at the stop deadline; they will be delivered again", c.e.redacted())
	}
	c.commit(context.WithoutCancel(ctx), "stop")
	c.cancelRun()
	c.cl.CloseAllowingRebalance()
	return err
}

// acks collects the acknowledgements of the records a kafka:// target sent while
// the workflow processed one consumed record. The consumer puts it into the
// processing context; a producer that finds it there sends asynchronously and
// reports the outcome to it, so a partition's next record starts without waiting
// for the broker, while the consumed record is committed only after everything
// it sent was acknowledged (at least once, as with synchronous sends). This is
// what lets a Kafka → Kafka workflow keep up with a plain franz-go loop.
type acks struct {
	w      *worker // told when the last acknowledgement of a sealed record arrives
	mu     sync.Mutex
	n      int
	sealed bool
	err    error
}

type acksKey struct{}

// acksFrom returns the collector of ctx, nil when ctx does not belong to a
// record being consumed.
func acksFrom(ctx context.Context) *acks {
	a, _ := ctx.Value(acksKey{}).(*acks)
	return a
}

// add registers one send; false means the record's workflow already finished
// (a wiretap copy sending later), and the caller must wait for its send itself.
func (a *acks) add() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sealed {
		return false
	}
	a.n++
	return true
}

// finish reports one send's outcome.
func (a *acks) finish(err error) {
	a.mu.Lock()
	a.n--
	if err != nil && a.err == nil {
		a.err = err
	}
	done := a.sealed && a.n == 0
	a.mu.Unlock()
	if done && a.w != nil {
		a.w.notify()
	}
}

// seal ends registration: the workflow finished.
func (a *acks) seal() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sealed = true
}

// complete reports whether the workflow finished and every send has its answer.
func (a *acks) complete() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sealed && a.n == 0
}

// succeeded reports whether the record is complete without a failed send.
func (a *acks) succeeded() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sealed && a.n == 0 && a.err == nil
}

// failed returns the first send error.
func (a *acks) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}
