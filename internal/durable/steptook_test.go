package durable

import (
	"testing"
	"time"
)

func TestStepTook(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	r := Run{CreatedAt: t0}
	steps := []StepRecord{
		{Segment: 0, At: t0.Add(2 * time.Millisecond)},
		{Segment: 0, At: t0.Add(5 * time.Millisecond)},
		{Segment: 1, At: t0.Add(time.Hour)}, // after a wait: its start is not kept
		{Segment: 1, At: t0.Add(time.Hour + time.Second)},
		{Segment: 1, At: t0.Add(time.Hour)}, // a clock that went backwards
	}
	for i, want := range []struct {
		d  time.Duration
		ok bool
	}{{2 * time.Millisecond, true}, {3 * time.Millisecond, true}, {0, false}, {time.Second, true}, {0, false}} {
		d, ok := StepTook(r, steps, i)
		if ok != want.ok || (ok && d != want.d) {
			t.Errorf("step %d: %v %v, want %v %v", i, d, ok, want.d, want.ok)
		}
	}
}
