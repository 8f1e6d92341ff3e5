package overview

import (
	"context"
	"testing"
	"time"
)

func TestQuantilesFromTheHistogram(t *testing.T) {
	t.Parallel()
	l := NewLatency()
	h := &hist{}
	l.hists.Store("w", h)
	for i := 0; i < 98; i++ {
		h.record(time.Millisecond)
	}
	h.record(500 * time.Millisecond)
	h.record(500 * time.Millisecond)
	p50, p99, n := l.Quantiles("w")
	if n != 100 {
		t.Fatalf("n = %d", n)
	}
	// The upper bound of a √2-wide bucket: within √2 above the value.
	if p50 < time.Millisecond || p50 > 1415*time.Microsecond {
		t.Errorf("p50 = %v, want 1ms..1.414ms", p50)
	}
	if p99 < 500*time.Millisecond || p99 > 708*time.Millisecond {
		t.Errorf("p99 = %v, want 500ms..707ms", p99)
	}
	if _, _, n := l.Quantiles("other"); n != 0 {
		t.Errorf("unknown workflow: n = %d", n)
	}
}

func TestRotateForgetsTheOldestGeneration(t *testing.T) {
	t.Parallel()
	l := NewLatency()
	_, end := l.StartExchange(context.Background(), "workflow", "w", "", nil)
	end(nil)
	if _, _, n := l.Quantiles("w"); n != 1 {
		t.Fatalf("after one exchange n = %d", n)
	}
	l.Rotate() // the exchange is in the previous generation: still counted
	if _, _, n := l.Quantiles("w"); n != 1 {
		t.Fatalf("after one rotation n = %d", n)
	}
	l.Rotate()
	if _, _, n := l.Quantiles("w"); n != 0 {
		t.Fatalf("after two rotations n = %d, want 0", n)
	}
}

func TestBucketBounds(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, time.Microsecond, bucketBase, bucketBase + 1, 3 * time.Millisecond, time.Hour} {
		i := bucketOf(d)
		if d > bounds[i] && i != buckets-1 {
			t.Errorf("%v in bucket %d with bound %v", d, i, bounds[i])
		}
		if i > 0 && d <= bounds[i-1] {
			t.Errorf("%v in bucket %d but fits %d (%v)", d, i, i-1, bounds[i-1])
		}
	}
}
