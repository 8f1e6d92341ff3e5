package server

import (
	"sync"

	"github.com/arvenza/helix/internal/component/mcp/server/requeststate"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Resuming an input-required call where it stopped (engine.Resume). Each run
// remembers the exchange before every top-level step; when the run stops on a
// question, the last one (before the step that asked) goes into the requestState
// as the checkpoint, and the retry starts at that step with that exchange: the
// steps before it do not run again. A snapshot that cannot be encoded (a body or
// header that is not plain JSON-like data) or would make the state too large is
// left out: the retry then runs the workflow from its first step.

// maxSnapshotBytes bounds an encoded snapshot, well inside the state's own limit.
const maxSnapshotBytes = 128 << 10

// resumePoint is the engine.Resume of one input-required call.
type resumePoint struct {
	from *requeststate.Checkpoint // the state's, nil: start at the first step
	// fresh are the headers this round sets (HeaderClientCapabilities …): they
	// win over a snapshot's, which are the round's that took it.
	fresh map[string]any

	mu    sync.Mutex
	names []string // of the top-level steps
	step  int
	last  *exchange.Snapshot // before step; nil before the first
}

var _ engine.Resume = (*resumePoint)(nil)

func (r *resumePoint) Start(steps []string, ex *exchange.Exchange) int {
	r.mu.Lock()
	r.names = steps
	r.mu.Unlock()
	// The step must still be the one that asked (its name holds its position in
	// the file): after a change to the workflow the call starts over.
	if r.from == nil || r.from.Step >= len(steps) || steps[r.from.Step] != r.from.Name {
		return 0
	}
	snap, err := exchange.DecodeSnapshot(r.from.Snapshot)
	if err != nil {
		return 0
	}
	snap.Restore(ex)
	msg := ex.In()
	for k, v := range r.fresh {
		msg.SetHeader(k, v)
	}
	return r.from.Step
}

func (r *resumePoint) Before(i int, ex *exchange.Exchange) {
	s := exchange.TakeSnapshot(ex) // a deep copy: later steps may change maps and lists in place
	r.mu.Lock()
	r.step, r.last = i, s
	r.mu.Unlock()
}

// checkpoint is where the run stopped, encoded; nil when it cannot be kept.
func (r *resumePoint) checkpoint() *requeststate.Checkpoint {
	r.mu.Lock()
	step, last, names := r.step, r.last, r.names
	r.mu.Unlock()
	if last == nil || step == 0 || step >= len(names) {
		return nil // stopped at the first step: nothing to skip
	}
	raw, err := last.Encode(maxSnapshotBytes)
	if err != nil {
		return nil
	}
	return &requeststate.Checkpoint{Step: step, Name: names[step], Snapshot: raw}
}
