package durable

import "context"

// ResolveSegment resolves the wait of run runID only while the run is parked
// in segment (a timer armed for one wait must not end a later wait of the same
// run); ErrNotWaiting otherwise. It makes the runtime a [SegmentResolver].
func (rt *Runtime) ResolveSegment(ctx context.Context, runID string, segment int, res Resolution) (Run, error) {
	return rt.resolveAt(ctx, runID, segment, res)
}

var _ SegmentResolver = (*Runtime)(nil)
