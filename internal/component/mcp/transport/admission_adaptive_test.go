package transport

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// backendModel is a tool waiting on a backend of k slots that serves a call in
// s: with n calls running, the median call takes s while they fit and s × n/k
// beyond (each waits for the calls ahead of it).
func backendModel(k int, s time.Duration, n int) time.Duration {
	return time.Duration(float64(s) * max(1, float64(n)/float64(k)))
}

// simHost feeds a controller the windows of clients calling a tool that waits
// on a backend of fixed capacity: offered calls would run at once; min(limit,
// offered) do, and the others wait for a slot (the window is limited). noise
// multiplies each window's median (a loaded host: 1 for none).
type simHost struct {
	c     *adaptiveControl
	limit int
}

func (h *simHost) window(k int, s time.Duration, offered int, noise float64) int {
	run := min(h.limit, offered)
	m := time.Duration(float64(backendModel(k, s, run)) * noise)
	h.limit = h.c.update(controlWindow{median: m, calls: 100, limited: offered > h.limit, running: float64(run)})
	return h.limit
}

// TestAdaptiveControlConvergesToBackendCapacity: offered more than a backend
// of 16 slots takes (every window is limited), a limit starting at 4 grows
// to the backend's capacity and then stays between it and 1.5× it (calls at
// most 1.5× their usual time); the baseline stays the backend's own time.
func TestAdaptiveControlConvergesToBackendCapacity(t *testing.T) {
	const k, s = 16, 5 * time.Millisecond
	h := &simHost{c: newAdaptiveControl(4, 1, AdaptiveMaxRunning), limit: 4}
	lo, hi := math.MaxInt, 0
	for i := range 2000 { // longer than the baseline's memory: no creeping up
		l := h.window(k, s, 1000, 1)
		if i >= 100 {
			lo, hi = min(lo, l), max(hi, l)
		}
	}
	if top := k*3/2 + int(math.Sqrt(k*3/2)) + 1; lo < k-1 || hi > top {
		t.Fatalf("limit ranged %d..%d after converging, want within %d..%d", lo, hi, k-1, top)
	}
	if h.c.baseline != s {
		t.Fatalf("baseline %v, want the backend's %v", h.c.baseline, s)
	}
}

// noisyLoad runs a controller through windows of twice what a backend of k
// slots × s takes, each window's latency multiplied by noise(i), and returns
// the share of the backend's capacity used (the goodput: min(limit, k)/k on
// average) and the mean limit over the windows from skip on.
func noisyLoad(c *adaptiveControl, k int, s time.Duration, windows, skip int, noise func(i int) float64) (goodput, mean float64) {
	h := &simHost{c: c, limit: int(c.limit)}
	var used, sum float64
	for i := range windows {
		l := h.window(k, s, 2*k, noise(i))
		if i >= skip {
			used += float64(min(l, k)) / float64(k)
			sum += float64(l)
		}
	}
	n := float64(windows - skip)
	return used / n, sum / n
}

// TestAdaptiveControlNoisyHost: on a loaded host every window's latency is
// off by a random factor (log-normal, σ 0.3: a third of the windows more
// than a third slower or faster than usual), whatever the concurrency; at twice a 16-slot
// backend's capacity the limit still keeps the backend busy (goodput ≥ 0.9)
// and does not run far past it (mean limit ≤ 2 × 16), over several seeds.
func TestAdaptiveControlNoisyHost(t *testing.T) {
	const k, s = 16, 5 * time.Millisecond
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 7))
		good, mean := noisyLoad(newAdaptiveControl(4, 1, AdaptiveMaxRunning), k, s, 3000, 100,
			func(int) float64 { return math.Exp(0.3 * rng.NormFloat64()) })
		if good < 0.9 || mean > 2*k {
			t.Errorf("seed %d: goodput %.2f (want ≥ 0.90), mean limit %.1f (want ≤ %d)", seed, good, mean, 2*k)
		}
	}
}

// TestAdaptiveControlSlowHostSpell: the host becomes three times slower for 30 s (a
// neighbour takes the CPU: every call slower, however many run), then normal
// again. Cutting the limit does not make calls faster, so the limit is not
// walked down to its floor (as it was when every slow window cut it): the
// backend stays mostly busy through the spell (a cut that did help, made
// while the limit was above the backend's capacity as the spell began, may
// stay), and after it the limit is back near the backend's capacity.
func TestAdaptiveControlSlowHostSpell(t *testing.T) {
	const k, s = 16, 5 * time.Millisecond
	c := newAdaptiveControl(4, 1, AdaptiveMaxRunning)
	noisyLoad(c, k, s, 500, 0, func(int) float64 { return 1 })
	good, _ := noisyLoad(c, k, s, 300, 0, func(int) float64 { return 3 })
	if good < 0.8 {
		t.Fatalf("goodput %.2f during a slow spell of the host, want ≥ 0.80 (limit now %v)", good, c.limit)
	}
	good, mean := noisyLoad(c, k, s, 1000, 200, func(int) float64 { return 1 })
	if good < 0.95 || mean > 1.5*k+math.Sqrt(1.5*k) {
		t.Fatalf("after the spell: goodput %.2f, mean limit %.1f, want ≥ 0.95 and near %d", good, mean, k)
	}
}

// TestAdaptiveControlLoadSteps: load below capacity, twice it, below again,
// twice again. Below capacity nothing waits and the limit does not move (so
// nothing is refused when the load drops); at twice it the limit settles near
// the backend's capacity each time.
func TestAdaptiveControlLoadSteps(t *testing.T) {
	const k, s = 16, 5 * time.Millisecond
	h := &simHost{c: newAdaptiveControl(32, 1, AdaptiveMaxRunning), limit: 32}
	for round := range 2 {
		for range 50 {
			if l := h.window(k, s, k/2, 1); l < k/2 {
				t.Fatalf("round %d, half the capacity offered: limit %d refuses calls", round, l)
			}
		}
		var seen []int
		for i := range 300 {
			if l := h.window(k, s, 2*k, 1); i >= 50 {
				seen = append(seen, l)
			}
		}
		if lo, hi := slices.Min(seen), slices.Max(seen); lo < k-1 || hi > k*3/2+int(math.Sqrt(k*3/2))+1 {
			t.Fatalf("round %d, twice the capacity: limit ranged %d..%d, want about %d", round, lo, hi, k)
		}
	}
	for range 50 {
		if l := h.window(k, s, k/2, 1); l < k/2 {
			t.Fatalf("load dropped: limit %d refuses calls", l)
		}
	}
}

// TestAdaptiveControlBackendShrinks: the backend loses most of its capacity
// (16 slots to 2: calls queue there, and fewer at once make them faster): the
// limit follows it down, never below its floor, and stays near it (a step of
// √limit from 2 or 3 overshoots by a call or two); when the backend recovers
// it grows back to the new capacity.
func TestAdaptiveControlBackendShrinks(t *testing.T) {
	const s = 5 * time.Millisecond
	h := &simHost{c: newAdaptiveControl(16, 2, AdaptiveMaxRunning), limit: 16}
	for range 100 {
		h.window(16, s, 64, 1)
	}
	var l int
	for i := range 200 {
		if l = h.window(2, s, 64, 1); l < 2 || (i >= 100 && l > 5) {
			t.Fatalf("window %d: limit %d after the backend shrank to 2 slots, want 2..5", i, l)
		}
	}
	for range 200 {
		l = h.window(16, s, 64, 1)
	}
	if l < 15 || l > 16*3/2+5 {
		t.Fatalf("limit %d after the backend recovered, want about 16", l)
	}
	if l = h.c.update(controlWindow{median: time.Hour, calls: adaptiveMinCalls - 1}); l != h.limit {
		t.Fatalf("a window of too few calls moved the limit to %d", l)
	}
}

// TestAdaptiveControlCPUSaturated: requests waiting for a slot grow the
// limit, except while runnable goroutines wait longer for a CPU than calls
// usually take (more calls at once would only queue for the CPU); waiting a
// little for the CPU (above schedTarget, below the calls' time) does not stop it.
func TestAdaptiveControlCPUSaturated(t *testing.T) {
	c := newAdaptiveControl(8, 1, AdaptiveMaxRunning)
	for range smoothWindows + 5 {
		c.update(controlWindow{median: 5 * time.Millisecond, calls: 50})
	}
	for range 20 {
		if l := c.update(controlWindow{median: 5 * time.Millisecond, calls: 50, limited: true, sched: 20 * time.Millisecond}); l != 8 {
			t.Fatalf("limit grew to %d while the CPU was saturated", l)
		}
	}
	if l := c.update(controlWindow{median: 5 * time.Millisecond, calls: 50, limited: true, sched: 2 * time.Millisecond}); l <= 8 {
		t.Fatalf("limit %d did not grow with the run queue at 2ms for calls of 5ms", l)
	}
}

// TestAdaptiveControlGrowsOnlyWhenLimited: calls at their usual speed that
// never wait for a slot leave the limit where it is (a limit nobody reaches
// says nothing about what the server can do).
func TestAdaptiveControlGrowsOnlyWhenLimited(t *testing.T) {
	c := newAdaptiveControl(8, 1, AdaptiveMaxRunning)
	for range 100 {
		if l := c.update(controlWindow{median: time.Millisecond, calls: 50}); l != 8 {
			t.Fatalf("limit %d, want 8", l)
		}
	}
	if l := c.update(controlWindow{median: time.Millisecond, calls: 50, limited: true}); l <= 8 {
		t.Fatalf("limited window: limit %d, want more than 8", l)
	}
	for range 1000 {
		c.update(controlWindow{median: time.Millisecond, calls: 50, limited: true})
	}
	if l := int(c.limit); l != AdaptiveMaxRunning {
		t.Fatalf("limit %d, want at most and finally %d", l, AdaptiveMaxRunning)
	}
}

// TestAdaptiveBaselineForgets: a backend that became slower for good is the
// new normal after the baseline's memory, so the limit stops being cut.
func TestAdaptiveBaselineForgets(t *testing.T) {
	c := newAdaptiveControl(16, 1, AdaptiveMaxRunning)
	for range smoothWindows {
		c.update(controlWindow{median: time.Millisecond, calls: 50})
	}
	for range baselineWindows + smoothWindows {
		c.update(controlWindow{median: 10 * time.Millisecond, calls: 50})
	}
	if c.baseline != 10*time.Millisecond {
		t.Fatalf("baseline %v, want 10ms", c.baseline)
	}
	before := c.limit
	c.update(controlWindow{median: 10 * time.Millisecond, calls: 50, limited: true})
	if c.limit <= before {
		t.Fatalf("limit %v did not grow from %v at the new normal", c.limit, before)
	}
}

// TestAdaptiveBaselineIgnoresALuckyWindow: one window far faster than the
// others (and one far slower) does not move the signal the limit follows,
// nor the baseline.
func TestAdaptiveBaselineIgnoresALuckyWindow(t *testing.T) {
	c := newAdaptiveControl(16, 1, AdaptiveMaxRunning)
	for i := range 200 {
		m := 5 * time.Millisecond
		switch i {
		case 50:
			m = 500 * time.Microsecond
		case 120:
			m = 50 * time.Millisecond
		}
		if l := c.update(controlWindow{median: m, calls: 50}); l != 16 {
			t.Fatalf("window %d (%v): limit %d, want 16", i, m, l)
		}
	}
	if c.baseline != 5*time.Millisecond {
		t.Fatalf("baseline %v, want 5ms", c.baseline)
	}
}

func TestAdaptiveQueueTimeout(t *testing.T) {
	c := newAdaptiveControl(4, 1, 8)
	if d := c.queueTimeout(50 * time.Millisecond); d != 50*time.Millisecond {
		t.Fatalf("without a baseline: %v", d)
	}
	for range smoothWindows {
		c.update(controlWindow{median: 5 * time.Millisecond, calls: 50})
	}
	if d := c.queueTimeout(50 * time.Millisecond); d != 5*time.Millisecond {
		t.Fatalf("baseline 5ms: %v, want 5ms", d)
	}
	c2 := newAdaptiveControl(4, 1, 8)
	for range smoothWindows {
		c2.update(controlWindow{median: 20 * time.Microsecond, calls: 50})
	}
	if d := c2.queueTimeout(50 * time.Millisecond); d != adaptiveQueueFloor {
		t.Fatalf("baseline 20µs: %v, want the floor %v", d, adaptiveQueueFloor)
	}
	if d := c.queueTimeout(3 * time.Millisecond); d != 3*time.Millisecond {
		t.Fatalf("configured below: %v, want 3ms", d)
	}
}

func TestLatencyHistMedian(t *testing.T) {
	var h latencyHist
	if h.median() != 0 {
		t.Fatal("empty histogram has a median")
	}
	for _, d := range []time.Duration{time.Microsecond, 100 * time.Microsecond, time.Millisecond, time.Millisecond, 5 * time.Millisecond} {
		h.add(d)
	}
	m := h.median()
	if m > time.Millisecond || float64(m) < 0.8*float64(time.Millisecond) {
		t.Fatalf("median %v, want about 1ms (a quarter octave below at most)", m)
	}
	for d := time.Duration(0); d < 10*time.Second; d = d*5/4 + time.Microsecond {
		if low := bucketLow(latencyBucket(d)); low > d {
			t.Fatalf("bucket of %v starts at %v, above it", d, low)
		}
	}
	h.add(-time.Second) // a clock step back cannot index out of range
	h.add(1000 * time.Hour)
}

func TestHistQuantile(t *testing.T) {
	buckets := []float64{math.Inf(-1), 0.0001, 0.001, 0.01, math.Inf(1)}
	prev := []uint64{5, 5, 5, 5}
	counts := []uint64{55, 45, 15, 5} // grew: 50 below 100µs, 40 up to 1ms, 10 up to 10ms
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, secs(0.0001)}, {0.9, secs(0.001)}, {0.95, secs(0.01)}} {
		if d := histQuantile(counts, prev, buckets, c.q); d != c.want {
			t.Fatalf("q%v: %v, want %v (the bucket's upper bound)", c.q, d, c.want)
		}
	}
	if d := histQuantile(counts, counts, buckets, 0.9); d != 0 {
		t.Fatalf("nothing grew: %v", d)
	}
	if d := histQuantile(counts, nil, buckets, 0.9); d != 0 {
		t.Fatalf("no previous reading: %v", d)
	}
	last := []uint64{5, 5, 5, 25}
	if d := histQuantile(last, prev, buckets, 0.9); d != secs(0.01) {
		t.Fatalf("in the open last bucket: %v, want its lower bound 10ms", d)
	}
	if d := newSchedLatency().read(schedQuantile); d != 0 {
		t.Fatalf("the first reading has nothing to compare with: %v", d)
	}
}

// secs converts as histQuantile does.
func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// TestAdmissionAdaptiveOnVirtualTime runs the whole Admission (windows closed
// by the calls' own releases) in a synctest bubble: clients calling a tool
// that waits on a backend of 4 slots for 5ms each, first one client (the usual
// latency), then 8 (twice the backend's capacity). The limit, started at 16,
// comes down to the backend's capacity and stays near it; every admitted call
// ends; when the load falls back to one client nothing is refused.
func TestAdmissionAdaptiveOnVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slots, service = 4, 5 * time.Millisecond
		adm := NewAdmission(AdmissionOptions{MaxRunning: 16, Adaptive: true})
		adm.control.min = 1 // not GOMAXPROCS: the same expectations on any machine
		sem := make(chan struct{}, slots)
		var mu sync.Mutex
		var seen []int // the limit every window once it settled
		refused := 0
		clients := func(n int, d time.Duration) {
			var wg sync.WaitGroup
			end := time.Now().Add(d)
			for range n {
				wg.Go(func() {
					for time.Now().Before(end) {
						if !adm.Acquire(context.Background(), 1) {
							mu.Lock()
							refused++
							mu.Unlock()
							time.Sleep(service) // a client backing off
							continue
						}
						start := time.Now()
						sem <- struct{}{}
						time.Sleep(service) // the backend's work
						<-sem
						adm.ReleaseTimed(1, start)
					}
				})
			}
			wg.Wait()
		}
		clients(1, 5*adaptiveInterval)
		if s := adm.Stats(); s.MaxRunning != 16 || s.Refused != 0 {
			t.Fatalf("one client: %+v", s)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 40; i++ {
				time.Sleep(adaptiveInterval)
				l := adm.Stats().MaxRunning
				mu.Lock()
				if i >= 10 {
					seen = append(seen, l)
				}
				mu.Unlock()
			}
		}()
		clients(2*slots, 40*adaptiveInterval)
		<-done
		mu.Lock()
		lo, hi := slices.Min(seen), slices.Max(seen)
		mu.Unlock()
		// It grows by √limit past twice the capacity at most, then is cut.
		if top := 2*slots + int(math.Sqrt(2*slots)); lo < slots-1 || hi > top {
			t.Fatalf("limit ranged %d..%d at twice the backend's capacity, want about %d (%d..%d)", lo, hi, slots, slots-1, top)
		}
		if s := adm.Stats(); s.Running != 0 || s.Waiting != 0 {
			t.Fatalf("after the load: %+v", s)
		}
		before := adm.Stats().Refused
		clients(1, 5*adaptiveInterval)
		if s := adm.Stats(); s.Refused != before {
			t.Fatalf("one client after the overload was refused: %+v", s)
		}
		t.Logf("refused %d, stats %+v", refused, adm.Stats())
	})
}

// TestAdaptiveQueueWaitIsTheUsualTime: behind a full adaptive limit whose
// calls usually take 5ms, a queued request is refused after 5ms, not the
// configured 50ms (so an admitted call waits at most about a call's usual
// time), and one whose slot comes within that wait is admitted. A slot free
// is never refused at the door, whatever the limit learnt.
func TestAdaptiveQueueWaitIsTheUsualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const usual = 5 * time.Millisecond
		adm := NewAdmission(AdmissionOptions{MaxRunning: 2, Adaptive: true, QueueTimeout: 50 * time.Millisecond})
		adm.mu.Lock()
		for range smoothWindows {
			adm.limit = adm.control.update(controlWindow{median: usual, calls: 50})
		}
		adm.mu.Unlock()
		if _, refused := adm.atDoor([]byte(holdCall(1))); refused {
			t.Fatal("refused at the door with every slot free")
		}
		for range adm.Stats().MaxRunning {
			if !adm.Acquire(context.Background(), 1) {
				t.Fatal("a free slot was refused")
			}
		}
		start := time.Now()
		if adm.Acquire(context.Background(), 1) {
			t.Fatal("admitted with every slot taken")
		}
		if waited := time.Since(start); waited != usual {
			t.Fatalf("a queued request waited %v, want the usual time %v", waited, usual)
		}
		go func() {
			time.Sleep(usual - time.Millisecond)
			adm.Release(1)
		}()
		start = time.Now()
		if !adm.Acquire(context.Background(), 1) || time.Since(start) != usual-time.Millisecond {
			t.Fatalf("a slot freed after %v: not admitted when it came (%v)", usual-time.Millisecond, time.Since(start))
		}
	})
}
