package pattern

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// MaxParallelBranches bounds the default concurrency of a parallel multicast, so a
// multicast with hundreds of branches does not start hundreds of calls at once.
const MaxParallelBranches = 16

// HeaderAggregateFailed lists the 0-based indexes of branches that failed when an
// aggregation tolerated the failure (see [NewMulticastAggregate]).
const HeaderAggregateFailed = "HelixAggregateFailed"

// MulticastOptions configure [NewMulticast]. The zero value is a sequential
// multicast without timeout that goes on after a failed branch.
type MulticastOptions struct {
	// Parallel runs branches concurrently; otherwise one after the other, in order.
	Parallel bool
	// MaxConcurrency bounds concurrent branches of a parallel multicast; 0 means the
	// number of branches, at most [MaxParallelBranches].
	MaxConcurrency int
	// Timeout bounds the whole multicast; 0 means none. When it passes, the multicast
	// completes with the replies that arrived, lists the others in header
	// HelixAggregateMissing and cancels them.
	Timeout time.Duration
	// StopOnError ends the multicast at the first failed branch: the branches still
	// running are cancelled, no further branch starts and the multicast fails with
	// that branch's error.
	StopOnError bool
}

// AggregateOptions configure the aggregation that follows a multicast; see
// [NewMulticastAggregate].
type AggregateOptions struct {
	// Strategy says how replies are combined; only "collect" (also the default for "")
	// exists: the body becomes the list of the replies' bodies in branch order.
	Strategy string
	// Size completes the aggregation once this many branches have finished; 0 means
	// every branch. It must not exceed the number of branches.
	Size int
	// Timeout completes the aggregation with what arrived; 0 means none.
	Timeout time.Duration
}

// StrategyCollect is the only aggregation strategy: the list of branch bodies.
const StrategyCollect = "collect"

// Multicast sends a copy ([exchange.Exchange.Copy]) of the exchange to every branch
// and replaces the body with the list of the branches' reply bodies, in branch order
// (not arrival order). Headers and variables of the original exchange are kept; those
// the branches set are not merged back (as in Camel, the branches work on copies).
//
// Completion: the multicast waits for every branch (or Size of them when aggregating),
// or until Timeout, whichever comes first. Branches that did not finish are cancelled
// (their context is cancelled), left out of the list and their indexes listed in header
// HelixAggregateMissing; the multicast never waits for them. Cancelling the exchange's
// context cancels every branch and fails the multicast.
//
// Failures, plain multicast: the other branches go on (unless StopOnError) and then
// the multicast fails with the error of the failed branch with the lowest index.
// Failures, multicast + aggregate: the aggregation tolerates failed branches — they
// are left out of the list and their indexes listed in header HelixAggregateFailed —
// unless no branch succeeded, then it fails with the first error.
//
// Goroutines: parallel branches run on goroutines owned by the Multicast; a branch
// abandoned at completion is cancelled and Stop waits for it to return. Sequential
// branches run on a goroutine too, so that a timeout is honoured even by a branch
// that ignores its context.
type Multicast struct {
	hc          *engine.Context
	opts        MulticastOptions
	aggregate   bool
	size        int
	timeout     time.Duration
	concurrency int
	branches    []engine.Processor
	name        string

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
	stopCtx context.Context // cancelled by Stop: ends abandoned branches
	cancel  context.CancelFunc
}

var (
	_ engine.Processor  = (*Multicast)(nil)
	_ engine.Services   = (*Multicast)(nil)
	_ engine.Named      = (*Multicast)(nil)
	_ component.Service = (*Multicast)(nil)
)

// NewMulticast returns a multicast over branches whose result is the list of every
// branch's reply body. Negative MaxConcurrency or Timeout are treated as 0.
func NewMulticast(hc *engine.Context, opts MulticastOptions, branches []engine.Processor) *Multicast {
	m := &Multicast{hc: hc, opts: opts, branches: append([]engine.Processor(nil), branches...), name: "multicast"}
	m.size = len(branches)
	m.timeout = max(opts.Timeout, 0)
	m.concurrency = 1
	if opts.Parallel {
		m.concurrency = opts.MaxConcurrency
		if m.concurrency <= 0 {
			m.concurrency = min(len(branches), MaxParallelBranches)
		}
	}
	m.concurrency = max(min(m.concurrency, len(branches)), 1)
	m.stopCtx, m.cancel = context.WithCancel(context.Background())
	return m
}

// NewMulticastAggregate returns a multicast whose replies are combined by an
// aggregation: it completes once agg.Size branches finished (successfully or not) or
// agg.Timeout passed, whichever is first, and tolerates failed branches (see
// [Multicast]). The effective timeout is the smaller of opts.Timeout and agg.Timeout
// when both are set.
func NewMulticastAggregate(hc *engine.Context, opts MulticastOptions, branches []engine.Processor, agg AggregateOptions) (*Multicast, error) {
	if err := agg.validate(len(branches)); err != nil {
		return nil, err
	}
	m := NewMulticast(hc, opts, branches)
	m.aggregate = true
	if agg.Size > 0 {
		m.size = agg.Size
	}
	if agg.Timeout > 0 && (m.timeout == 0 || agg.Timeout < m.timeout) {
		m.timeout = agg.Timeout
	}
	return m, nil
}

func (a AggregateOptions) validate(branches int) error {
	var errs []error
	if s := strings.ToLower(a.Strategy); s != "" && s != StrategyCollect {
		errs = append(errs, fmt.Errorf("aggregate: unknown strategy %q: the supported strategy is %q", a.Strategy, StrategyCollect))
	}
	if a.Size < 0 {
		errs = append(errs, fmt.Errorf("aggregate: completion size must be positive, got %d", a.Size))
	}
	if a.Size > branches {
		errs = append(errs, fmt.Errorf("aggregate: completion size %d is more than the %d multicast branches, so it could never complete by size", a.Size, branches))
	}
	if a.Timeout < 0 {
		errs = append(errs, fmt.Errorf("aggregate: completion timeout must not be negative, got %s", a.Timeout))
	}
	return errors.Join(errs...)
}

// WithName sets the step name used in error messages and dead letter headers.
func (m *Multicast) WithName(name string) *Multicast { m.name = name; return m }

// Name returns the step name.
func (m *Multicast) Name() string { return m.name }

// Children lets the engine find and start services nested in the branches.
func (m *Multicast) Children() []engine.Processor { return m.branches }

// Start is a no-op: branches' own services are started through Children.
func (m *Multicast) Start(context.Context) error { return nil }

// Stop cancels branches still running after their multicast completed and waits
// for them until ctx is done. Process fails after Stop.
func (m *Multicast) Stop(ctx context.Context) error {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: branches did not finish after cancellation: %w", m.name, ctx.Err())
	}
}

type branchResult struct {
	index int
	ex    *exchange.Exchange
	err   error
}

// Process runs the branches and sets the body to the collected replies.
func (m *Multicast) Process(ctx context.Context, ex *exchange.Exchange) error {
	n := len(m.branches)
	if n == 0 {
		ex.In().SetBody([]any{})
		return nil
	}
	bctx, cancel := context.WithCancel(ctx)
	// Branches must also end when the multicast is stopped, even though their
	// exchange's context may live on.
	stopCancel := context.AfterFunc(m.stopCtx, cancel)
	defer stopCancel()
	defer cancel() // at completion: abandoned branches are cancelled, not waited for

	var timeout <-chan time.Time
	if m.timeout > 0 {
		t := time.NewTimer(m.timeout)
		defer t.Stop()
		timeout = t.C
	}

	results := make([]*branchResult, n)
	// Buffered for every branch so a branch finishing after completion never blocks.
	resCh := make(chan branchResult, n)
	started, running, finished := 0, 0, 0
	var stopErr error
	startMore := func() error {
		for started < n && running < m.concurrency {
			if err := m.start(bctx, started, ex.Copy(), resCh); err != nil {
				return err
			}
			started++
			running++
		}
		return nil
	}
	if err := startMore(); err != nil {
		return err
	}
	timedOut := false
loop:
	for finished < m.size {
		select {
		case r := <-resCh:
			running--
			finished++
			results[r.index] = &r
			// An interrupt (a question for the MCP client) does not stop the other
			// branches: their questions go into the same answer (engine.Interrupt).
			if r.err != nil && m.opts.StopOnError && !engine.IsInterrupt(r.err) {
				stopErr = fmt.Errorf("%s: branch %d: %w", m.name, r.index, r.err)
				break loop
			}
			if err := startMore(); err != nil {
				return err
			}
		case <-timeout:
			timedOut = true
			break loop
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", m.name, ctx.Err())
		}
	}
	if stopErr != nil {
		return stopErr
	}
	return m.complete(ex, results, timedOut)
}

// start runs branch i on a goroutine owned by m.
func (m *Multicast) start(ctx context.Context, i int, copy *exchange.Exchange, resCh chan<- branchResult) error {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return fmt.Errorf("%s: stopped", m.name)
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		resCh <- branchResult{index: i, ex: copy, err: runBranch(ctx, m.hc, i, m.branches[i], copy)}
	}()
	return nil
}

// runBranch runs branch (or element) i, turning a panic into an error: a branch runs
// on its own goroutine, where the pipeline's recovery cannot reach it. The side
// effects of a durable run's branch i carry the step's idempotency key with "[i]"
// appended, so that two branches never share one. A multicast's branch is one of
// its workflow's nested steps, traced as such (engine.RunNested) when hc is set.
func runBranch(ctx context.Context, hc *engine.Context, i int, p engine.Processor, ex *exchange.Exchange) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &engine.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	if p == nil {
		return nil
	}
	return engine.RunNested(durable.SubKey(ctx, "["+strconv.Itoa(i)+"]"), hc, p, ex)
}

// complete builds the collected list; results[i] is nil for branches that did not finish.
func (m *Multicast) complete(ex *exchange.Exchange, results []*branchResult, timedOut bool) error {
	list := make([]any, 0, len(results))
	var missing, failed []any
	var firstErr error
	var interrupts []error
	succeeded := 0
	for i, r := range results {
		switch {
		case r == nil:
			missing = append(missing, i)
		case engine.IsInterrupt(r.err):
			// Never tolerated as a failed branch: the caller must see it, and
			// every branch's (a durable run parks on all their waits at once).
			interrupts = append(interrupts, fmt.Errorf("%s: branch %d: %w", m.name, i, r.err))
		case r.err != nil:
			failed = append(failed, i)
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: branch %d: %w", m.name, i, r.err)
			}
		default:
			succeeded++
			list = append(list, r.ex.In().Body())
		}
	}
	if len(interrupts) == 1 {
		return interrupts[0]
	}
	if len(interrupts) > 1 {
		return errors.Join(interrupts...)
	}
	if firstErr != nil && (!m.aggregate || succeeded == 0) {
		return firstErr
	}
	if timedOut {
		logger(m.hc).Warn("multicast completed by timeout", "step", m.name, "exchange", ex.ID(), "timeout", m.timeout, "missing", missing)
	}
	if len(failed) > 0 {
		logger(m.hc).Warn("multicast branches failed; aggregated without them", "step", m.name, "exchange", ex.ID(), "failed", failed, "error", firstErr)
	}
	msg := ex.In()
	msg.SetBody(list)
	// nil removes a header left by an earlier multicast in the same workflow.
	msg.SetHeader(exchange.HeaderAggregateMissing, nilIfEmpty(missing))
	msg.SetHeader(HeaderAggregateFailed, nilIfEmpty(failed))
	return nil
}

// logger returns hc's logger; Go API users may build processors without a context.
func logger(hc *engine.Context) *slog.Logger {
	if hc == nil {
		return slog.Default()
	}
	return hc.Logger()
}

func nilIfEmpty(s []any) any {
	if len(s) == 0 {
		return nil
	}
	return s
}
