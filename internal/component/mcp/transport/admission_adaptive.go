package transport

import (
	"math"
	"math/bits"
	"runtime/metrics"
	"slices"
	"time"
)

// The adaptive limit of max_running: auto. A tool that waits on something of
// fixed capacity (a database pool, an API, a model) gets slower when more calls
// run than that capacity takes: the extra ones wait inside the tool. The limit
// looks for that queueing in the time a call holds its slot, compared with the
// usual time, in the way of a Vegas- or gradient-style limit:
//
//   - The slowness signal is the median of the last smoothWindows windows'
//     median latencies: one window slowed by something else (the host's other
//     work, a collection) does not move the limit.
//   - The usual time (the baseline) is a low quantile of that signal over the
//     last baselineWindows windows, not its minimum: on a noisy host a lucky
//     window would make every ordinary one look slow. A backend that became
//     slower for good is the new usual after that memory.
//   - While calls run slower than latencyTolerance × the baseline, the limit
//     is cut to the calls running × baseline/now (what the backend took at the
//     usual speed, by Little's law; at most a tenth, at least half). After any
//     change the next decision waits until the filter holds windows after it.
//   - Latency against concurrency: a cut that did not make calls faster (the
//     signal fell by less than half of what the cut should have taken off if
//     calls queued behind each other) shows the slowness is not queueing
//     behind our own calls: the cut is undone and no other is made for
//     cutHoldoff windows (twice that after a second such cut in a row, and so
//     on), so that a slow host does not walk the limit down to its floor.
//   - While requests wait for a slot and calls run at their usual speed it
//     grows by √limit, unless the CPU is saturated: when runnable goroutines
//     wait longer for a CPU (runtime/metrics' /sched/latencies:seconds) than
//     calls usually take, more calls at once would only queue for the CPU.
//
// A tool that only uses this process's CPU for microseconds is not what the
// limit is for: its queue forms before the handler, in the run queue and in
// the sockets, and refusing its calls costs about what serving them does. (On
// few cores the limit even costs it: calls sharing the CPU run slower, the
// limit is cut, and they wait for a slot instead of for the CPU.)
//
// An admitted call runs to its end whatever the limit becomes, and the limit
// never falls below GOMAXPROCS, so a wrong signal cannot refuse every call.

const (
	// adaptiveInterval is the control window: long enough to hold many calls of
	// milliseconds, short enough to react within a fraction of a second.
	adaptiveInterval = 100 * time.Millisecond
	// adaptiveMinCalls is the fewest calls a window needs before its median
	// latency is believed.
	adaptiveMinCalls = 8
	// smoothWindows is how many windows' medians the slowness signal is the
	// median of (odd).
	smoothWindows = 3
	// latencyTolerance: calls slower than this × the baseline are waiting on
	// something the running calls share.
	latencyTolerance = 1.5
	// limitBackoff and limitBackoffMax bound the cut of a slow window.
	limitBackoff    = 0.9
	limitBackoffMax = 0.5
	// baselineWindows is the baseline's memory in windows (about 50 s): a
	// backend that became slower for good is the new usual after it.
	// baselineQuantile is the quantile of the signal over it that is the
	// baseline: low enough to be the usual speed of a limit that visits it
	// after every cut, not so low that a lucky stretch sets it.
	baselineWindows  = 512
	baselineQuantile = 0.1
	// growSettle is how many windows follow a growth before the next
	// decision: the median of smoothWindows is then mostly windows after it.
	growSettle = smoothWindows/2 + 1
	// cutHoldoff is how many windows no cut follows one that did not help,
	// doubling with every other one in a row up to maxHoldoff.
	cutHoldoff = 10
	maxHoldoff = 320
	// AdaptiveMaxRunning is the highest limit max_running: auto grows to.
	AdaptiveMaxRunning = 1024
	// schedTarget: the run-queue latency below which the CPU is never taken
	// for saturated (a few goroutines always wait a little).
	schedTarget = time.Millisecond
	// schedQuantile is the quantile of the run-queue latency compared with
	// schedTarget and the calls' usual time.
	schedQuantile = 0.9
	// adaptiveQueueFloor is the shortest queue timeout of an adaptive limit
	// (the baseline otherwise, see queueTimeout).
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
	// running is the mean number of calls running as those calls ended (0:
	// unknown, taken for the limit): a limit above what runs is cut from
	// what runs.
	running float64
}

// adaptiveControl is the controller: it holds no clock and no lock, so that a
// test can feed it windows.
type adaptiveControl struct {
	min, max int
	limit    float64
	baseline time.Duration // baselineQuantile of the signal over the memory

	// recent are the medians of the last smoothWindows windows (ring at
	// nRecent, full once nRecent ≥ smoothWindows).
	recent  [smoothWindows]time.Duration
	nRecent int
	// memory holds the signal of the last baselineWindows windows (ring at
	// memAt), memCounts how many of them fall in each latencyHist bucket.
	memory    [baselineWindows]time.Duration
	memCounts [len(latencyHist{}.counts)]uint16
	memN      int
	memAt     int

	// settle is the windows left until the signal's filter holds only windows
	// after the last change of the limit: no decision before. A cut is then
	// judged against cutFrom (the limit before it) and cutSignal (the signal
	// that made it).
	settle    int
	judge     bool
	cutFrom   float64
	cutRan    float64 // calls running when the cut was made
	cutSignal time.Duration
	holdoff   int // windows left in which no cut is made
	// unhelpful is how many cuts in a row did not help: each one doubles
	// the holdoff after it (up to maxHoldoff).
	unhelpful int
}

func newAdaptiveControl(initial, lo, hi int) *adaptiveControl {
	lo = max(lo, 1)
	hi = max(hi, lo)
	return &adaptiveControl{min: lo, max: hi, limit: float64(min(max(initial, lo), hi))}
}

// update takes one window and returns the new limit.
func (c *adaptiveControl) update(w controlWindow) int {
	if w.calls < adaptiveMinCalls || w.median <= 0 {
		return int(c.limit)
	}
	c.recent[c.nRecent%smoothWindows] = w.median
	if c.nRecent++; c.nRecent < smoothWindows {
		return int(c.limit) // the signal's filter is not full yet
	}
	signal := c.signal()
	c.noteBaseline(signal)
	if c.holdoff > 0 {
		c.holdoff--
	}
	if c.settle > 0 {
		if c.settle--; c.settle > 0 {
			return int(c.limit)
		}
		if c.judge {
			// Queueing behind our own calls would have taken the signal from
			// cutSignal to cutSignal × limit/cutRan, or to the baseline; not
			// half way there: the slowness was not ours.
			c.judge = false
			ref := float64(c.cutSignal)
			want := max(ref*min(c.limit/c.cutRan, 1), float64(c.baseline))
			if float64(signal) > (ref+want)/2 {
				c.limit = c.cutFrom
				c.holdoff = min(cutHoldoff<<c.unhelpful, maxHoldoff)
				c.unhelpful = min(c.unhelpful+1, 16)
				c.settle = smoothWindows
				return int(c.limit)
			}
			c.unhelpful = 0
		}
	}
	from := c.limit
	switch {
	case float64(signal) > latencyTolerance*float64(c.baseline):
		if c.holdoff == 0 {
			cut := min(max(float64(c.baseline)/float64(signal), limitBackoffMax), limitBackoff)
			ran := c.limit
			if w.running > 0 {
				ran = min(ran, w.running)
			}
			c.limit = max(ran*cut, float64(c.min))
			c.judge, c.cutFrom, c.cutRan, c.cutSignal = c.limit < from, from, ran, signal
		}
	case w.limited && w.sched <= max(schedTarget, c.baseline):
		// Calls run at their usual speed again: whatever slowed them without
		// being ours has passed, and a limit that grows must be cut when
		// the growth makes them slow.
		c.limit = min(c.limit+math.Sqrt(c.limit), float64(c.max))
		c.holdoff, c.unhelpful = 0, 0
	}
	if c.limit != from {
		c.settle = smoothWindows
		if !c.judge {
			c.settle = growSettle
		}
	}
	return int(c.limit)
}

// signal is the median of the last smoothWindows windows' medians.
func (c *adaptiveControl) signal() time.Duration {
	r := c.recent
	slices.Sort(r[:])
	return r[smoothWindows/2]
}

// noteBaseline adds a signal to the memory and sets the baseline to the
// memory's baselineQuantile: the bucket holding it is found by the counts, the
// value in the bucket by a scan.
func (c *adaptiveControl) noteBaseline(s time.Duration) {
	if c.memN == baselineWindows {
		c.memCounts[latencyBucket(c.memory[c.memAt])]--
	} else {
		c.memN++
	}
	c.memory[c.memAt] = s
	c.memCounts[latencyBucket(s)]++
	c.memAt = (c.memAt + 1) % baselineWindows
	want := int(math.Ceil(baselineQuantile * float64(c.memN)))
	seen := 0
	for i, n := range c.memCounts {
		if seen += int(n); seen < want {
			continue
		}
		var in []time.Duration // the (want − (seen − n))th lowest of the bucket (a few: once a window)
		for _, d := range c.memory[:c.memN] {
			if latencyBucket(d) == i {
				in = append(in, d)
			}
		}
		slices.Sort(in)
		c.baseline = in[want-(seen-int(n))-1]
		return
	}
}

// queueTimeout is the longest a request of an adaptive limit waits for a slot:
// the usual time a call holds one (so that a queued call ends within about
// twice its usual latency), at least adaptiveQueueFloor, at most configured.
func (c *adaptiveControl) queueTimeout(configured time.Duration) time.Duration {
	if c.baseline == 0 {
		return configured
	}
	return min(max(c.baseline, adaptiveQueueFloor), configured)
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
