package durable

import "time"

// StepTook is how long step i of a run's steps (its checkpoints, in order)
// ran: from the checkpoint before it in the same segment, or the run's start
// for the first step of the first segment. A later segment's first step
// started when a wait was resolved, which the store does not keep: ok is
// false then (and for a clock that went backwards).
func StepTook(r Run, steps []StepRecord, i int) (d time.Duration, ok bool) {
	var from time.Time
	switch {
	case i > 0 && steps[i-1].Segment == steps[i].Segment:
		from = steps[i-1].At
	case steps[i].Segment == 0:
		from = r.CreatedAt
	default:
		return 0, false
	}
	d = steps[i].At.Sub(from)
	return d, d >= 0
}
