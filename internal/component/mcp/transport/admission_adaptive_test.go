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
// s: with limit calls running, the median call takes s while they fit and
// s × limit/k beyond (each waits for the calls ahead of it).
func backendModel(k int, s time.Duration, limit int) time.Duration {
	return time.Duration(float64(s) * max(1, float64(limit)/float64(k)))
}

// TestAdaptiveControlConvergesToBackendCapacity: offered more than a backend
// of 16 slots takes (every window is limited), a limit starting at 4 grows
// to the backend's capacity and then stays between it and 1.5× it (calls at
// most 1.5× their usual time); the baseline stays the backend's own time.
func TestAdaptiveControlConvergesToBackendCapacity(t *testing.T) {
	const k, s = 16, 5 * time.Millisecond
	c := newAdaptiveControl(4, 1, AdaptiveMaxRunning)
	limit := 4
	lo, hi := math.MaxInt, 0
	for i := range 2000 { // longer than the baseline's memory: no creeping up
		limit, _ = c.update(controlWindow{median: backendModel(k, s, limit), calls: 100, limited: true, windows: 1})
		if i >= 100 {
			lo, hi = min(lo, limit), max(hi, limit)
		}
	}
	if lo < k-1 || hi > k*3/2+int(math.Sqrt(k*3/2))+1 {
		t.Fatalf("limit ranged %d..%d after converging, want within %d..%d", lo, hi, k, k*3/2+int(math.Sqrt(k*3/2))+1)
	}
	if c.baseline != s {
		t.Fatalf("baseline %v, want the backend's %v", c.baseline, s)
	}
}

// TestAdaptiveControlGrowsOnlyWhenLimited: calls at their usual speed that
// never wait for a slot leave the limit where it is (a limit nobody reaches
// says nothing about what the server can do).
func TestAdaptiveControlGrowsOnlyWhenLimited(t *testing.T) {
	c := newAdaptiveControl(8, 1, AdaptiveMaxRunning)
	for range 100 {
		if l, _ := c.update(controlWindow{median: time.Millisecond, calls: 50, windows: 1}); l != 8 {
			t.Fatalf("limit %d, want 8", l)
		}
	}
	if l, _ := c.update(controlWindow{median: time.Millisecond, calls: 50, limited: true, windows: 1}); l <= 8 {
		t.Fatalf("limited window: limit %d, want more than 8", l)
	}
}

// TestAdaptiveControlBacksOffAndRecovers: calls running much slower than
// usual cut the limit, never below its floor, whatever the signal says; when
// they run at their usual speed again and requests wait for slots, it grows
// back past where it started. Windows with too few calls move nothing.
func TestAdaptiveControlBacksOffAndRecovers(t *testing.T) {
	c := newAdaptiveControl(32, 2, AdaptiveMaxRunning)
	c.update(controlWindow{median: time.Millisecond, calls: 50, windows: 1})
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		m := time.Duration(1+rng.IntN(1000)) * 10 * time.Millisecond // 10ms .. 10s: a sick backend
		l, _ := c.update(controlWindow{median: m, calls: 50, limited: rng.IntN(2) == 0, windows: 1})
		if l < 2 {
			t.Fatalf("limit %d below its floor 2", l)
		}
	}
	if l := int(c.limit); l != 2 {
		t.Fatalf("limit %d after a long slow spell, want the floor 2", l)
	}
	if l, _ := c.update(controlWindow{median: time.Hour, calls: adaptiveMinCalls - 1, windows: 1}); l != 2 {
		t.Fatalf("a window of too few calls moved the limit to %d", l)
	}
	var l int
	for range 50 {
		l, _ = c.update(controlWindow{median: time.Millisecond, calls: 50, limited: true, windows: 1})
	}
	if l <= 32 {
		t.Fatalf("limit %d after recovering, want more than its start 32", l)
	}
	for range 1000 {
		l, _ = c.update(controlWindow{median: time.Millisecond, calls: 50, limited: true, windows: 1})
	}
	if l != AdaptiveMaxRunning {
		t.Fatalf("limit %d, want at most and finally %d", l, AdaptiveMaxRunning)
	}
}

// TestAdaptiveControlShed: a saturated run queue raises the share refused at
// the door step by step, never to everything; calm windows lower it to zero,
// and a pause (a window spanning many intervals) clears it at once.
func TestAdaptiveControlShed(t *testing.T) {
	c := newAdaptiveControl(4, 1, AdaptiveMaxRunning)
	prev := 0
	for range 100 {
		_, shed := c.update(controlWindow{sched: 5 * schedTarget, windows: 1})
		if shed < prev || shed > shedMax {
			t.Fatalf("shed %d after %d: must rise to at most %d", shed, prev, shedMax)
		}
		prev = shed
	}
	if prev != shedMax {
		t.Fatalf("shed %d after a long saturation, want %d", prev, shedMax)
	}
	_, shed := c.update(controlWindow{sched: schedTarget / 2, windows: 1})
	if shed != shedMax-shedRelief {
		t.Fatalf("one calm window: shed %d, want %d", shed, shedMax-shedRelief)
	}
	if _, shed = c.update(controlWindow{windows: 1000}); shed != 0 {
		t.Fatalf("after a pause: shed %d, want 0", shed)
	}
	// The run queue signal does not move the concurrency limit.
	if int(c.limit) != 4 {
		t.Fatalf("limit %v, want 4", c.limit)
	}
}

// TestAdaptiveBaselineForgets: a backend that became slower for good is the
// new normal after the baseline's memory, so the limit stops being cut.
func TestAdaptiveBaselineForgets(t *testing.T) {
	c := newAdaptiveControl(16, 1, AdaptiveMaxRunning)
	c.update(controlWindow{median: time.Millisecond, calls: 50, windows: 1})
	for range baselineBlocks*baselineBlock + 1 {
		c.update(controlWindow{median: 10 * time.Millisecond, calls: 50, windows: 1})
	}
	if c.baseline != 10*time.Millisecond {
		t.Fatalf("baseline %v, want 10ms", c.baseline)
	}
	before := c.limit
	c.update(controlWindow{median: 10 * time.Millisecond, calls: 50, limited: true, windows: 1})
	if c.limit <= before {
		t.Fatalf("limit %v did not grow from %v at the new normal", c.limit, before)
	}
}

func TestAdaptiveQueueTimeout(t *testing.T) {
	c := newAdaptiveControl(4, 1, 8)
	if d := c.queueTimeout(50 * time.Millisecond); d != 50*time.Millisecond {
		t.Fatalf("without a baseline: %v", d)
	}
	c.update(controlWindow{median: 5 * time.Millisecond, calls: 50, windows: 1})
	if d := c.queueTimeout(50 * time.Millisecond); d != 10*time.Millisecond {
		t.Fatalf("baseline 5ms: %v, want 10ms", d)
	}
	c2 := newAdaptiveControl(4, 1, 8)
	c2.update(controlWindow{median: 20 * time.Microsecond, calls: 50, windows: 1})
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
