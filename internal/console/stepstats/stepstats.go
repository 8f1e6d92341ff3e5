// Package stepstats counts, per workflow and per top-level step, how many
// exchanges ran, how many failed and how long they took, for the console's
// workflow pages. It is an engine.Tracer: the engine calls it around every
// exchange and every top-level step; as an engine.NestedTracer it also counts
// the steps of nested step lists (choice and multicast branches, a split's
// steps), each known by its position in the YAML ("helix.yaml:14:9").
//
// Cost: the set of counters is fixed when the Stats is made (one entry per
// declared workflow, step and nested step), so a lookup takes no lock and
// memory never grows with traffic; a step adds atomic increments and, in the
// steady state, no allocation.
package stepstats

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/pkg/exchange"
)

// Def declares one workflow to count: its kind ("workflow", "tool", "agent",
// "pipeline"), its id, the number of its top-level steps and the positions
// ("file:line:col", as config.Pos prints them) of its nested steps.
type Def struct {
	Kind, ID string
	Steps    int
	Nested   []string
}

// Stats is the tracer; make it with New.
type Stats struct {
	byKey map[key]*counters
}

type key struct{ kind, id string }

type counters struct {
	exchange Counter
	steps    []Counter
	// nested is keyed by a nested step's position; nil without nested steps.
	nested map[string]*Counter
}

// New returns a Stats counting the workflows of defs. Exchanges of workflows
// not in defs are not counted.
func New(defs []Def) *Stats {
	s := &Stats{byKey: make(map[key]*counters, len(defs))}
	for _, d := range defs {
		n := d.Steps
		if n < 0 {
			n = 0
		}
		c := &counters{steps: make([]Counter, n)}
		for _, pos := range d.Nested {
			if c.nested == nil {
				c.nested = make(map[string]*Counter, len(d.Nested))
			}
			if c.nested[pos] == nil { // a YAML alias repeats a step: one counter
				c.nested[pos] = new(Counter)
			}
		}
		s.byKey[key{d.Kind, d.ID}] = c
	}
	return s
}

type ctxKey struct{}

// The context of an exchange holds its workflow's *counters (nil for an
// exchange of a workflow not counted). A step's end is its Counter, which
// is an console.Ender: in a tee (the console on), an exchange costs one
// context value and no other allocation, and no clock read of its own.
var _ console.Clocked = (*Stats)(nil)

// StartExchange implements engine.Tracer.
func (s *Stats) StartExchange(ctx context.Context, kind, id, trigger string, ex *exchange.Exchange) (context.Context, func(error)) {
	now := time.Now()
	ctx, e := s.StartExchangeAt(ctx, now, kind, id, trigger, ex)
	return ctx, endFunc(e, now)
}

// StartStep implements engine.Tracer.
func (s *Stats) StartStep(ctx context.Context, name string, index int, ex *exchange.Exchange) (context.Context, func(error)) {
	now := time.Now()
	ctx, e := s.StartStepAt(ctx, now, name, index, ex)
	return ctx, endFunc(e, now)
}

// endFunc is e (nil or a *Counter) as an engine tracer's end func, for the
// tracer used on its own: a pooled timer, so that it allocates nothing either.
func endFunc(e console.Ender, start time.Time) func(error) {
	c, _ := e.(*Counter)
	if c == nil {
		return noop
	}
	t := timers.Get().(*timer)
	t.c, t.start = c, start
	return t.end
}

// StartExchangeAt implements console.Clocked.
func (s *Stats) StartExchangeAt(ctx context.Context, _ time.Time, kind, id, _ string, _ *exchange.Exchange) (context.Context, console.Ender) {
	c := s.byKey[key{kind, id}]
	if c == nil {
		// Not ours: hide an outer exchange's counters so that this one's steps
		// are not counted against it (a direct:// call into an undeclared
		// workflow).
		if ctx.Value(ctxKey{}) != nil {
			ctx = context.WithValue(ctx, ctxKey{}, (*counters)(nil))
		}
		return ctx, nil
	}
	return context.WithValue(ctx, ctxKey{}, c), &c.exchange
}

// StartStepAt implements console.Clocked.
func (s *Stats) StartStepAt(ctx context.Context, _ time.Time, _ string, index int, _ *exchange.Exchange) (context.Context, console.Ender) {
	c, _ := ctx.Value(ctxKey{}).(*counters)
	if c == nil || index < 0 || index >= len(c.steps) {
		return ctx, nil
	}
	return ctx, &c.steps[index]
}

func noop(error) {}

// StartNestedStep implements engine.NestedTracer: it counts the nested step
// whose position name starts with, in the workflow of the exchange's run.
// Nested steps may run at the same time, so each gets its own timer, from a
// pool so that the steady state allocates nothing.
func (s *Stats) StartNestedStep(ctx context.Context, name string, _ *exchange.Exchange) (context.Context, func(error)) {
	r, _ := ctx.Value(ctxKey{}).(*counters)
	if r == nil || r.nested == nil {
		return ctx, noop
	}
	c := r.nested[Position(name)]
	if c == nil {
		return ctx, noop
	}
	return ctx, endFunc(c, time.Now())
}

// Position is the position part of a step name ("helix.yaml:14:9" of
// "helix.yaml:14:9 log", as engine.StepName gives it); the whole name when it
// has no kind after a space.
func Position(name string) string {
	if i := strings.LastIndexByte(name, ' '); i > 0 {
		return name[:i]
	}
	return name
}

// timer times one nested step; end is its finish method, bound once when the
// timer is made so that handing it out allocates nothing.
type timer struct {
	c     *Counter
	start time.Time
	end   func(error)
}

var timers sync.Pool // of *timer

func init() {
	timers.New = func() any {
		t := &timer{}
		t.end = t.finish
		return t
	}
}

func (t *timer) finish(err error) {
	now := time.Now()
	c, d := t.c, now.Sub(t.start)
	t.c = nil
	timers.Put(t)
	c.observeAt(d, err != nil, now)
}

// Snapshot is one workflow's counts.
type Snapshot struct {
	Exchange Summary
	Steps    []Summary
	// Nested are the counts of the nested steps, by position.
	Nested map[string]Summary
}

// Get returns the counts of a workflow; ok is false when it is not counted.
func (s *Stats) Get(kind, id string) (Snapshot, bool) {
	c := s.byKey[key{kind, id}]
	if c == nil {
		return Snapshot{}, false
	}
	out := Snapshot{Exchange: c.exchange.Summary(), Steps: make([]Summary, len(c.steps))}
	for i := range c.steps {
		out.Steps[i] = c.steps[i].Summary()
	}
	if len(c.nested) > 0 {
		out.Nested = make(map[string]Summary, len(c.nested))
		for pos, n := range c.nested {
			out.Nested[pos] = n.Summary()
		}
	}
	return out, true
}

// bounds are the upper bounds of the latency buckets: 1µs doubling up to about
// 70 minutes; a last bucket takes everything longer. A quantile is reported as
// its bucket's upper bound, so it is at most twice the true value.
var bounds = func() []time.Duration {
	var b []time.Duration
	for d := time.Microsecond; d < 72*time.Minute; d *= 2 {
		b = append(b, d)
	}
	return b
}()

// Counter counts runs, failures and a latency histogram with atomics.
type Counter struct {
	count, errors atomic.Uint64
	buckets       [40]atomic.Uint64 // len(bounds)+1 ≤ 40, checked by a test
	last          atomic.Int64      // unix nanoseconds of the last run
}

// Observe records one run that took d.
func (c *Counter) Observe(d time.Duration, failed bool) { c.observeAt(d, failed, time.Now()) }

// End implements console.Ender: the run that started at start ended at now.
func (c *Counter) End(err error, start, now time.Time) { c.observeAt(now.Sub(start), err != nil, now) }

// observeAt records one run that took d and ended at now.
func (c *Counter) observeAt(d time.Duration, failed bool, now time.Time) {
	c.count.Add(1)
	if failed {
		c.errors.Add(1)
	}
	c.buckets[bucket(d)].Add(1)
	c.last.Store(now.UnixNano())
}

func bucket(d time.Duration) int {
	if d <= bounds[0] {
		return 0
	}
	// bounds[i] = 1µs·2^i: the bucket is ⌈log2(d/1µs)⌉.
	i := int(math.Ceil(math.Log2(float64(d) / float64(time.Microsecond))))
	if i > len(bounds) {
		return len(bounds)
	}
	// Float rounding at an exact power of two.
	if i > 0 && i < len(bounds) && d <= bounds[i-1] {
		i--
	}
	return i
}

// Summary is what a page shows of a Counter.
type Summary struct {
	Count, Errors uint64
	// P50 and P99 are upper bounds of the buckets holding the quantiles; zero
	// without runs. Slower than the last bound reads as the last bound.
	P50, P99 time.Duration
	Last     time.Time
}

// Summary reads c (each field atomically; the whole is not one instant).
func (c *Counter) Summary() Summary {
	var hist [40]uint64
	var total uint64
	for i := 0; i <= len(bounds); i++ {
		hist[i] = c.buckets[i].Load()
		total += hist[i]
	}
	s := Summary{Count: c.count.Load(), Errors: c.errors.Load()}
	if n := c.last.Load(); n != 0 {
		s.Last = time.Unix(0, n)
	}
	s.P50, s.P99 = quantile(hist[:len(bounds)+1], total, 0.50), quantile(hist[:len(bounds)+1], total, 0.99)
	return s
}

func quantile(hist []uint64, total uint64, q float64) time.Duration {
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, n := range hist {
		seen += n
		if seen >= rank {
			if i >= len(bounds) {
				return bounds[len(bounds)-1]
			}
			return bounds[i]
		}
	}
	return bounds[len(bounds)-1]
}
