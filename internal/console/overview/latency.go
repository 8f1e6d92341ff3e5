package overview

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/pkg/exchange"
)

// Latency is an engine tracer that keeps, per workflow, a fixed-size
// histogram of exchange durations over a sliding window: two generations of
// buckets, the older dropped at every Rotate, so p50/p99 cover between one
// and two rotation periods. Recording is a map load and an atomic add; no
// lock a page holds is on the exchange path.
type Latency struct {
	hists sync.Map // workflow id → *hist
}

// bucket i holds durations up to bucketBase·√2^i; the last one everything above.
const (
	buckets    = 56
	bucketBase = 10 * time.Microsecond
)

var bounds = func() [buckets]time.Duration {
	var b [buckets]time.Duration
	for i := range b {
		b[i] = time.Duration(float64(bucketBase) * math.Pow(math.Sqrt2, float64(i)))
	}
	return b
}()

type hist struct {
	cur atomic.Int32
	gen [2][buckets]atomic.Uint64
}

// NewLatency returns an empty tracer.
func NewLatency() *Latency { return &Latency{} }

// StartExchange implements engine.Tracer.
func (l *Latency) StartExchange(ctx context.Context, _, id, _ string, _ *exchange.Exchange) (context.Context, func(error)) {
	h := l.hist(id)
	start := time.Now()
	return ctx, func(error) { h.record(time.Since(start)) }
}

// StartExchangeAt implements console.Clocked: in the console's tee the
// exchange's histogram is its end, so an exchange allocates nothing here and
// reads no clock of its own.
func (l *Latency) StartExchangeAt(ctx context.Context, _ time.Time, _, id, _ string, _ *exchange.Exchange) (context.Context, console.Ender) {
	return ctx, l.hist(id)
}

// StartStepAt implements console.Clocked; steps are not timed here.
func (l *Latency) StartStepAt(ctx context.Context, _ time.Time, _ string, _ int, _ *exchange.Exchange) (context.Context, console.Ender) {
	return ctx, nil
}

func (l *Latency) hist(id string) *hist {
	h, ok := l.hists.Load(id)
	if !ok {
		h, _ = l.hists.LoadOrStore(id, &hist{})
	}
	return h.(*hist)
}

// End implements console.Ender.
func (h *hist) End(_ error, start, now time.Time) { h.record(now.Sub(start)) }

func (h *hist) record(d time.Duration) {
	i := bucketOf(d)
	h.gen[h.cur.Load()][i].Add(1)
}

func bucketOf(d time.Duration) int {
	if d <= bucketBase {
		return 0
	}
	i := min(int(math.Ceil(2*math.Log2(float64(d)/float64(bucketBase)))), buckets-1)
	for i > 0 && bounds[i-1] >= d { // float rounding at a boundary
		i--
	}
	for i < buckets-1 && bounds[i] < d {
		i++
	}
	return i
}

// StartStep implements engine.Tracer; steps are not timed here.
func (l *Latency) StartStep(ctx context.Context, _ string, _ int, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, noop
}

func noop(error) {}

// Rotate starts a new generation in every histogram, dropping the oldest.
func (l *Latency) Rotate() {
	l.hists.Range(func(_, v any) bool {
		h := v.(*hist)
		next := 1 - h.cur.Load()
		for i := range h.gen[next] {
			h.gen[next][i].Store(0)
		}
		h.cur.Store(next)
		return true
	})
}

// Quantiles returns the p50 and p99 of workflow id's recent exchanges (the
// upper bound of the bucket each falls in), and how many exchanges they are
// computed from; n is 0 when there were none.
func (l *Latency) Quantiles(id string) (p50, p99 time.Duration, n uint64) {
	v, ok := l.hists.Load(id)
	if !ok {
		return 0, 0, 0
	}
	h := v.(*hist)
	var counts [buckets]uint64
	for g := range h.gen {
		for i := range counts {
			counts[i] += h.gen[g][i].Load()
		}
	}
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0, 0, 0
	}
	return quantile(&counts, n, 0.5), quantile(&counts, n, 0.99), n
}

func quantile(counts *[buckets]uint64, n uint64, q float64) time.Duration {
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return bounds[i]
		}
	}
	return bounds[buckets-1]
}
