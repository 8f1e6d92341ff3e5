package transport

import (
	"math"
	"math/bits"
	"runtime/metrics"
	"time"
)

// The adaptive limit of max_running: auto. Two kinds of overload need two
// signals:
//
//   - A tool that waits on something of fixed capacity (a database pool, an
//     API, a model) gets slower when more calls run than that capacity takes:
//     the extra ones wait inside the tool. The median time a call holds its
//     slot, against the lowest median of the last minute (the baseline),
//     shows it; the concurrency limit follows it: it grows by √limit while
//     the limit is what holds requests back and calls run at their usual
//     speed, and while calls run slower than latencyTolerance × the baseline
//     it is cut to limit × baseline/median (what the backend took at the
//     usual speed, by Little's law; at most a tenth, at least half). Cutting
//     to where calls run at their usual speed again keeps the baseline true.
//   - A tool that only uses this process's CPU for microseconds never holds
//     many slots: its queue forms before the handler, in the Go scheduler's
//     run queue and in the sockets, where no concurrency limit sees it. The
//     time runnable goroutines wait for a CPU (runtime/metrics'
//     /sched/latencies:seconds) shows it; it drives the share of calls
//     refused at the door, before their body is parsed (streamable.go), so
//     that a refusal costs a small part of a call.
//
// Both only ever refuse new work: an admitted call runs to its end whatever
// the limit becomes. The limit never falls below GOMAXPROCS and the shed share
// never reaches everything, so a wrong signal cannot refuse every call; both
// come back when the signal does (the shed share also while no call arrives).

const (
	// adaptiveInterval is the control window: long enough to hold many calls of
	// milliseconds, short enough to react within a fraction of a second.
	adaptiveInterval = 100 * time.Millisecond
	// adaptiveMinCalls is the fewest calls a window needs before its median
	// latency is believed.
	adaptiveMinCalls = 8
	// latencyTolerance: calls slower than this × the baseline are waiting on
	// something the running calls share.
	latencyTolerance = 1.5
	// limitBackoff and limitBackoffMax bound the cut of a slow window.
	limitBackoff    = 0.9
	limitBackoffMax = 0.5
	// baselineBlocks × baselineBlock windows (about 50 s) is how long the
	// baseline remembers a median: a backend that became slower for good is the
	// new normal after that, instead of shrinking the limit to its floor.
	baselineBlocks = 8
	baselineBlock  = 64
	// AdaptiveMaxRunning is the highest limit max_running: auto grows to.
	AdaptiveMaxRunning = 1024
	// schedTarget: when a tenth of the goroutines that became runnable in a
	// window waited longer than this for a CPU, the CPU is saturated and calls
	// queue in front of the handler.
	schedTarget = time.Millisecond
	// schedQuantile is the quantile of the run-queue latency compared to schedTarget.
	schedQuantile = 0.9
	// shedStep and shedRelief are what the shed share gains per saturated
	// window and loses per calm one (in thousandths): it rises fast enough to
	// meet twice the capacity within a second and falls more slowly, so that it
	// settles instead of swinging.
	shedStep   = 50
	shedRelief = 20
	// shedMax bounds the shed share: some calls always get through, so that
	// the signal can show the load has fallen.
	shedMax = 950
	// adaptiveQueueFloor is the shortest queue timeout of an adaptive limit
	// (2 × the baseline otherwise, see queueTimeout).
	adaptiveQueueFloor = time.Millisecond
)

// controlWindow is what one control window saw.
type controlWindow struct {
	// median is the median time the calls that ended in the window held their
	// slot; calls is how many ended.
	median time.Duration
	calls  int
	// limited: a request queued for a slot, or was refused for the lack of one.
	limited bool
	// sched is the schedQuantile run-queue latency of the window (0: unknown).
	sched time.Duration
	// windows is how many control intervals the window spans (at least 1): a
	// window after a pause counts for the intervals nobody called in.
	windows int
}

// adaptiveControl is the controller: it holds no clock and no lock, so that a
// test can feed it windows.
type adaptiveControl struct {
	min, max int
	limit    float64
	baseline time.Duration // lowest median of the blocks
	shed     int           // thousandths of the calls refused at the door
	// blocks are the lowest medians of the last baselineBlocks blocks of
	// baselineBlock windows (0: none yet); block is the current one, inBlock
	// its windows so far.
	blocks  [baselineBlocks]time.Duration
	block   int
	inBlock int
}

func newAdaptiveControl(initial, lo, hi int) *adaptiveControl {
	lo = max(lo, 1)
	hi = max(hi, lo)
	return &adaptiveControl{min: lo, max: hi, limit: float64(min(max(initial, lo), hi))}
}

// update takes one window and returns the new limit and shed share.
func (c *adaptiveControl) update(w controlWindow) (limit, shed int) {
	n := max(w.windows, 1)
	if w.sched > schedTarget {
		c.shed = min(c.shed+shedStep, shedMax)
	} else {
		c.shed = max(c.shed-n*shedRelief, 0)
	}
	if w.calls >= adaptiveMinCalls && w.median > 0 {
		c.noteMedian(w.median)
		switch {
		case float64(w.median) > latencyTolerance*float64(c.baseline):
			cut := min(max(float64(c.baseline)/float64(w.median), limitBackoffMax), limitBackoff)
			c.limit = max(c.limit*cut, float64(c.min))
		case w.limited:
			c.limit = min(c.limit+math.Sqrt(c.limit), float64(c.max))
		}
	}
	return int(c.limit), c.shed
}

// noteMedian adds a window's median to the baseline's blocks.
func (c *adaptiveControl) noteMedian(m time.Duration) {
	if b := &c.blocks[c.block]; *b == 0 || m < *b {
		*b = m
	}
	if c.inBlock++; c.inBlock == baselineBlock {
		c.inBlock = 0
		c.block = (c.block + 1) % baselineBlocks
		c.blocks[c.block] = 0
	}
	c.baseline = 0
	for _, b := range c.blocks {
		if b > 0 && (c.baseline == 0 || b < c.baseline) {
			c.baseline = b
		}
	}
}

// queueTimeout is the longest a request of an adaptive limit waits for a slot:
// twice the usual time a call holds one (so that a queued call ends within
// about three times its usual latency), at least adaptiveQueueFloor, at most
// configured.
func (c *adaptiveControl) queueTimeout(configured time.Duration) time.Duration {
	if c.baseline == 0 {
		return configured
	}
	return min(max(2*c.baseline, adaptiveQueueFloor), configured)
}

// latencyHist counts call latencies in buckets a quarter octave wide (from
// 1 µs), enough to tell latencyTolerance apart and cheap to add to.
type latencyHist struct {
	counts [128]uint32
	n      int
}

func latencyBucket(d time.Duration) int {
	v := uint64(max(d, 0)/time.Microsecond) + 1
	e := bits.Len64(v) - 1 // floor(log2 v)
	var frac uint64
	if e >= 2 {
		frac = (v >> (e - 2)) & 3
	} else if e == 1 {
		frac = (v & 1) << 1
	}
	return min(e*4+int(frac), 127)
}

// bucketLow is the lowest latency of bucket i.
func bucketLow(i int) time.Duration {
	e, frac := i/4, i%4
	return time.Duration((uint64(4+frac)<<e)>>2)*time.Microsecond - time.Microsecond
}

func (h *latencyHist) add(d time.Duration) {
	h.counts[latencyBucket(d)]++
	h.n++
}

// median returns the lowest latency of the bucket holding the median, 0 when empty.
func (h *latencyHist) median() time.Duration {
	if h.n == 0 {
		return 0
	}
	seen := 0
	for i, c := range h.counts {
		if seen += int(c); 2*seen >= h.n {
			return max(bucketLow(i), time.Microsecond)
		}
	}
	return 0
}

func (h *latencyHist) reset() { *h = latencyHist{} }

// schedLatency reads the Go scheduler's run-queue latency histogram and
// returns its quantile over the goroutines that became runnable since the last
// call (0 the first time or when none did).
type schedLatency struct {
	sample []metrics.Sample
	prev   []uint64
}

const schedMetric = "/sched/latencies:seconds"

func newSchedLatency() *schedLatency {
	return &schedLatency{sample: []metrics.Sample{{Name: schedMetric}}}
}

func (s *schedLatency) read(q float64) time.Duration {
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0 // not in this Go: the CPU signal is off
	}
	h := s.sample[0].Value.Float64Histogram()
	d := histQuantile(h.Counts, s.prev, h.Buckets, q)
	s.prev = append(s.prev[:0], h.Counts...)
	return d
}

// histQuantile is the q quantile of counts − prev (a cumulative histogram's
// growth) as the upper bound of its bucket (the lower one for the last,
// unbounded bucket); 0 when nothing grew or prev does not match counts.
func histQuantile(counts, prev []uint64, buckets []float64, q float64) time.Duration {
	if len(prev) != len(counts) || len(buckets) != len(counts)+1 {
		return 0
	}
	var total uint64
	for i := range counts {
		total += counts[i] - prev[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i := range counts {
		if seen += counts[i] - prev[i]; seen >= want {
			b := buckets[i+1]
			if math.IsInf(b, 1) {
				b = buckets[i]
			}
			if b <= 0 || math.IsInf(b, 0) {
				return 0
			}
			return time.Duration(b * float64(time.Second))
		}
	}
	return 0
}
