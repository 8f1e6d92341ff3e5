// Package audit records the calls through a gateway server (gateway.Auditor):
// each record goes through a bounded queue to a writer goroutine that delivers
// batches to the sink audit.sink names (log, or a file, kafka or postgres
// endpoint URI) and counts a record done only when the sink acknowledged it. A
// sink that is down is retried with backoff; records that find the queue full,
// and at shutdown those the sink did not take in time, go to a spool file under
// the data dir that is delivered later (at the next start at the latest), so a
// record is never dropped.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/recordstore"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/uri"
)

// SinkLog is audit.sink's value for one log line per record (also the default).
const SinkLog = "log"

// Defaults of a file sink's rotation.
const (
	DefaultMaxFileBytes = 100 << 20
	DefaultKeepFiles    = 10
)

// stillFailingEvery is how often the warning of a sink that keeps refusing
// records is repeated (a table of another shape, a topic the credentials may
// not write: nothing is dropped, so someone must act).
const stillFailingEvery = time.Minute

// Options tune an Auditor; the zero value is usable.
type Options struct {
	// DataDir is helix.data_dir: the spool is <DataDir>/audit/<server>.spool.
	// "" means config.DefaultDataDir.
	DataDir string
	// Logger gets the log sink's lines and the auditor's warnings; nil means
	// hc.Logger() (slog.Default() without hc).
	Logger *slog.Logger
	// Metrics counts records written, retried and spooled; nil counts nothing.
	Metrics *Metrics
	// QueueSize bounds the records waiting for the writer (default 4096).
	QueueSize int
	// BatchSize is the most records written to the sink at once (default 256).
	BatchSize int
	// EnqueueWait is how long Record waits for room in a full queue before it
	// spools the record instead (default 50ms); while the queue stays full,
	// records are spooled without waiting.
	EnqueueWait time.Duration
	// WriteTimeout bounds one write to the sink (default 10s).
	WriteTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between writes while the sink
	// fails (defaults 100ms and 5s).
	RetryMin, RetryMax time.Duration

	// stuckGrace is how long Close waits, after its context ended, for a write
	// that does not honour its context (a hung file system) before it spools
	// that write's records itself (default 2s).
	stuckGrace time.Duration
}

func (o *Options) defaults() {
	if o.DataDir == "" {
		o.DataDir = config.DefaultDataDir
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.EnqueueWait <= 0 {
		o.EnqueueWait = 50 * time.Millisecond
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 100 * time.Millisecond
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(5*time.Second, o.RetryMin)
	}
	if o.stuckGrace <= 0 {
		o.stuckGrace = 2 * time.Second
	}
}

// Auditor is the gateway.Auditor of one gateway server.
type Auditor struct {
	server    string
	arguments string
	store     recordstore.Store
	sink      string // the metrics' label: log, or the sink URI's scheme
	logger    *slog.Logger
	count     *counters
	spool     *spool
	opts      Options

	// mu guards closed and sending on queue: Close takes it to close the queue
	// once no Record is sending.
	mu     sync.RWMutex
	closed bool
	queue  chan recordstore.Record
	// overflowing: a record found the queue full and was spooled, and none has
	// found room since. waits counts the calls that waited for room.
	overflowing atomic.Bool
	waits       atomic.Int64

	// runCtx is cancelled when Close's context ends: writes in progress stop and
	// what is left goes to the spool.
	runCtx    context.Context
	abort     context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	spoolErr  error // the first failed spooling (a record then only in the log)
	spoolErrs sync.Mutex

	// inflight is the batch being written; abandoned says Close spooled it
	// because the write did not return (see stuckGrace).
	inflightMu sync.Mutex
	inflight   []recordstore.Record
	abandoned  bool
}

var _ gateway.Auditor = (*Auditor)(nil)

// New returns the auditor of the gateway server named server, writing to the
// sink of cfg and delivering first what an earlier run spooled. hc resolves a
// sink URI to its component (which must be able to keep records: file, kafka,
// postgres); it may be nil for the log sink. Errors name cfg's position.
func New(hc *engine.Context, server string, cfg *config.AuditConfig, opts Options) (*Auditor, error) {
	if cfg == nil {
		return nil, errors.New("audit: no audit: configuration")
	}
	opts.defaults()
	where := "audit"
	if cfg.Pos.IsValid() {
		where = cfg.Pos.String() + ": audit"
	}
	arguments, err := argumentsSetting(where, cfg.Arguments)
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		if hc != nil {
			logger = hc.Logger()
		} else {
			logger = slog.Default()
		}
	}
	store, sink, err := openStore(hc, cfg, logger)
	if err != nil {
		// The sink URI may hold a password: the error shows it masked.
		return nil, fmt.Errorf("%s.sink: %s", where, scrubText(err.Error()))
	}
	sp, err := newSpool(filepath.Join(opts.DataDir, "audit"), server)
	if err != nil {
		_ = store.Close(context.Background())
		return nil, fmt.Errorf("%s: %w (set helix.data_dir to a directory Helix may write)", where, err)
	}
	runCtx, abort := context.WithCancel(context.Background())
	a := &Auditor{server: server, arguments: arguments, store: store, sink: sink,
		logger: logger.With("server", server, "audit_sink", sink), count: opts.Metrics.counters(server, sink),
		spool: sp, opts: opts, queue: make(chan recordstore.Record, opts.QueueSize),
		runCtx: runCtx, abort: abort, done: make(chan struct{})}
	go a.run()
	return a, nil
}

// Validate checks cfg as New would, without starting anything or touching
// the data dir: for a configuration check (helix validate).
func Validate(hc *engine.Context, cfg *config.AuditConfig) error {
	if cfg == nil {
		return errors.New("audit: no audit: configuration")
	}
	where := "audit"
	if cfg.Pos.IsValid() {
		where = cfg.Pos.String() + ": audit"
	}
	if _, err := argumentsSetting(where, cfg.Arguments); err != nil {
		return err
	}
	store, _, err := openStore(hc, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("%s.sink: %s", where, scrubText(err.Error()))
	}
	return store.Close(context.Background())
}

func argumentsSetting(where, s string) (string, error) {
	switch s {
	case "":
		return ArgumentsDigest, nil
	case ArgumentsDigest, ArgumentsRedacted, ArgumentsFull, ArgumentsNone:
		return s, nil
	}
	return "", fmt.Errorf("%s.arguments: %q is not a setting; write digest, redacted, full or none", where, s)
}

// openStore opens the sink cfg.Sink names. Opening checks the URI and starts
// nothing (the stores connect at their first write).
func openStore(hc *engine.Context, cfg *config.AuditConfig, logger *slog.Logger) (recordstore.Store, string, error) {
	sink := strings.TrimSpace(cfg.Sink)
	if sink == "" || sink == SinkLog {
		return logStore{logger: logger}, SinkLog, nil
	}
	u, err := uri.Parse(sink)
	if err != nil {
		return nil, "", fmt.Errorf("%v; write log, or a file, kafka or postgres endpoint URI", err)
	}
	if hc == nil {
		return nil, "", fmt.Errorf("%s: no engine to reach the sink's component", u.Scheme)
	}
	comp, ok := hc.Component(u.Scheme)
	if !ok {
		return nil, "", fmt.Errorf("no component for %s:// in this build (registered: %s); write log, or a file, kafka or postgres endpoint URI", u.Scheme, strings.Join(hc.Schemes(), ", "))
	}
	opener, ok := comp.(recordstore.Opener)
	if !ok {
		return nil, "", fmt.Errorf("the %s:// component cannot keep audit records; write log, or a file, kafka or postgres endpoint URI", u.Scheme)
	}
	o := recordstore.Options{MaxFileBytes: cfg.MaxFileBytes, KeepFiles: cfg.KeepFiles}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.KeepFiles <= 0 {
		o.KeepFiles = DefaultKeepFiles
	}
	store, err := opener.OpenRecordStore(u, o)
	if err != nil {
		return nil, "", err
	}
	return store, u.Scheme, nil
}

// Record queues r for the sink. It waits at most Options.EnqueueWait for room
// in a full queue, then spools r; after Close it spools r, delivered at the
// next start. r is copied: the caller may reuse it.
func (a *Auditor) Record(ctx context.Context, r *gateway.Record) {
	if r == nil {
		return
	}
	rec := a.prepare(ctx, r)
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.closed {
		select {
		case a.queue <- rec:
			if a.overflowing.Load() {
				a.overflowing.Store(false)
			}
			return
		default:
		}
		// A full queue: the first call waits a little for room; while the
		// queue stays full, the calls after it spool at once rather than each
		// pay the wait.
		if !a.overflowing.Load() {
			a.waits.Add(1)
			t := time.NewTimer(a.opts.EnqueueWait)
			defer t.Stop()
			select {
			case a.queue <- rec:
				return
			case <-t.C:
				a.overflowing.Store(true)
			}
		}
	}
	a.toSpool([]recordstore.Record{rec})
}

// prepare turns r into the record the sink keeps: the arguments as the
// setting says, defaults filled in, credentials hidden.
func (a *Auditor) prepare(ctx context.Context, r *gateway.Record) recordstore.Record {
	c := *r
	if c.ID == "" {
		c.ID = newID()
	}
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	c.Time = c.Time.UTC()
	if c.Server == "" {
		c.Server = a.server
	}
	if c.Principal == "" {
		c.Principal = "anonymous"
	}
	token := ""
	if p := gateway.PrincipalFrom(ctx); p != nil {
		token = p.Token
	}
	c.Arguments, c.ArgumentsDigest = applyArguments(a.arguments, r.Arguments)
	if a.arguments == ArgumentsFull {
		// Only full arguments and the error are free text a credential can be
		// in; the other fields are the gateway's own names and ids.
		c.Arguments = scrubRecord(c.Arguments, token)
	}
	if len(token) >= minTokenLen {
		c.Error = strings.ReplaceAll(c.Error, token, hidden)
	}
	c.Error = scrubText(c.Error)
	b, err := json.Marshal(&c)
	if err != nil {
		// Only Arguments can fail to encode, and applyArguments gave valid JSON;
		// keep the record without them rather than lose it.
		c.Arguments = nil
		b, _ = json.Marshal(&c)
	}
	return recordstore.Record{ID: c.ID, JSON: b}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// toSpool keeps recs in the spool file. Should the disk refuse them, the
// records go to the log at error level: the last place left to keep them.
func (a *Auditor) toSpool(recs []recordstore.Record) {
	if len(recs) == 0 {
		return
	}
	if err := a.spool.append(recs); err != nil {
		a.spoolErrs.Lock()
		if a.spoolErr == nil {
			a.spoolErr = err
		}
		a.spoolErrs.Unlock()
		for _, r := range recs {
			a.logger.Error("audit record neither delivered nor spooled", "error", err, "record", string(r.JSON))
		}
		return
	}
	a.count.addSpooled(len(recs))
}

// run is the writer: it delivers what an earlier run spooled, then batches
// from the queue, and the spool again whenever records went there.
func (a *Auditor) run() {
	defer close(a.done)
	batch := make([]recordstore.Record, 0, a.opts.BatchSize)
	for {
		// The spool goes between batches of the queue, so that steady traffic
		// cannot keep it waiting.
		if a.runCtx.Err() == nil && a.spool.hasPending() {
			a.deliverSpool()
			continue
		}
		first, ok := <-a.queue
		if !ok {
			break
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < a.opts.BatchSize {
			select {
			case r, ok := <-a.queue:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		a.deliver(batch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.store.Close(ctx); err != nil {
		a.logger.Warn("audit sink did not close cleanly", "error", scrubText(err.Error()))
	}
}

// deliver writes batch to the sink until it is acknowledged, with backoff
// while the sink fails; once Close gave up waiting, the batch is spooled. It
// reports whether the sink took the batch.
func (a *Auditor) deliver(batch []recordstore.Record) bool {
	delay := a.opts.RetryMin
	failing, attempts, warned := false, 0, time.Time{}
	for {
		if a.runCtx.Err() != nil {
			a.toSpool(batch)
			return false
		}
		a.inflightMu.Lock()
		if a.abandoned {
			a.inflightMu.Unlock()
			a.toSpool(batch)
			return false
		}
		a.inflight = batch
		a.inflightMu.Unlock()
		ctx, cancel := context.WithTimeout(a.runCtx, a.opts.WriteTimeout)
		err := a.store.Write(ctx, batch)
		cancel()
		a.inflightMu.Lock()
		a.inflight = nil
		abandoned := a.abandoned
		a.inflightMu.Unlock()
		if abandoned {
			return err == nil // Close spooled the batch already
		}
		if err == nil {
			a.count.addWritten(len(batch))
			if failing {
				a.logger.Info("audit sink takes records again")
			}
			return true
		}
		if a.runCtx.Err() != nil {
			continue // spooled above
		}
		a.count.addRetried(len(batch))
		attempts++
		if !failing || time.Since(warned) >= stillFailingEvery {
			// One warning when the outage starts and a reminder now and then,
			// not one per attempt.
			a.logger.Warn("audit sink refuses records; retrying, the records are kept", "records", len(batch), "attempts", attempts,
				"queued", len(a.queue), "error", scrubText(err.Error()))
			failing, warned = true, time.Now()
		}
		select {
		case <-time.After(delay):
		case <-a.runCtx.Done():
		}
		delay = min(2*delay, a.opts.RetryMax)
	}
}

// deliverSpool delivers the spool file in batches and removes it when every
// record in it was acknowledged; when Close gives up first, what is left of it
// goes back to the spool.
func (a *Auditor) deliverSpool() {
	path, err := a.spool.take()
	if err != nil || path == "" {
		if err != nil {
			a.logger.Error("audit spool cannot be read; its records stay in it", "error", err)
			a.spool.giveUp()
		}
		return
	}
	r, err := openSpool(path)
	if err != nil {
		a.logger.Error("audit spool cannot be read; its records stay in it", "error", err)
		a.spool.giveUp()
		return
	}
	defer r.close()
	for {
		batch, err := r.next(a.opts.BatchSize)
		if len(batch) > 0 {
			a.deliver(batch) // spools the batch itself once aborted
		}
		if err != nil {
			a.logger.Error("audit spool cannot be read to its end; its records stay in it", "error", err)
			a.spool.giveUp()
			return
		}
		if len(batch) == 0 {
			break
		}
	}
	if r.bad > 0 {
		a.logger.Warn("audit spool had lines that are not records (a write torn by a crash); skipped", "lines", r.bad)
	}
	if err := removeFile(path); err != nil {
		a.logger.Error("audit spool delivered but not removed; its records will be delivered again at the next start", "error", err)
		a.spool.giveUp()
	}
}

// abandonWriter spools, in Close, what a writer stuck in a write that does not
// honour its context holds: the batch being written and the rest of the queue.
// Should the write return later and succeed, those records are delivered
// twice (the sinks keep a record delivered twice once or with its id).
func (a *Auditor) abandonWriter() {
	a.logger.Error("audit sink does not return from a write; its records and the queue are spooled")
	a.inflightMu.Lock()
	batch := a.inflight
	a.inflight = nil
	a.abandoned = true
	a.inflightMu.Unlock()
	a.toSpool(batch)
	var rest []recordstore.Record
	for r := range a.queue {
		rest = append(rest, r)
	}
	a.toSpool(rest)
}

// Close stops taking records into the queue, delivers what is queued, and
// when ctx ends first spools what the sink has not acknowledged (delivered at
// the next start). It returns an error only when a record could be neither
// delivered nor spooled (it is then in the log). Calls after the first return
// the first's result.
func (a *Auditor) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true
		close(a.queue)
		a.mu.Unlock()
		select {
		case <-a.done:
		case <-ctx.Done():
			a.abort()
			select {
			case <-a.done:
			case <-time.After(a.opts.stuckGrace):
				a.abandonWriter()
			}
		}
		a.abort()
		a.spoolErrs.Lock()
		defer a.spoolErrs.Unlock()
		if a.spoolErr != nil {
			a.closeErr = fmt.Errorf("audit of %s: records that could not be spooled were logged: %w", a.server, a.spoolErr)
		}
	})
	return a.closeErr
}
