package transport

import "sync/atomic"

// DefaultReplayBudget is the default of helix.mcp.replay_budget: the event data
// the resumable streams of all sessions of the process may keep together. 64 MiB
// is an eighth of a 512 MiB container, leaving the rest to the running workflows,
// the other sessions' live answers and the Go heap's headroom (GOGC doubles the
// live heap before it collects).
const DefaultReplayBudget = 64 << 20

// ReplayBudget bounds the bytes of event data that resumable streams keep for
// replay, across sessions (resume.go). Every session also keeps at most
// replayMaxBytes. A session makes room among its own events first (the oldest
// answered streams, then the oldest events no reader still has to write); an event
// that still does not fit is not kept: a reader attached to its stream writes it
// and forgets it, and a client that resumes from before it gets 400 and sends its
// request again (the 2026-07-28 protocol does that for every broken stream). Safe
// for concurrent use.
type ReplayBudget struct {
	limit   atomic.Int64
	used    atomic.Int64
	dropped atomic.Uint64
}

// NewReplayBudget returns a budget of limit bytes (<= 0: nothing is kept).
func NewReplayBudget(limit int64) *ReplayBudget {
	b := &ReplayBudget{}
	b.limit.Store(limit)
	return b
}

var processReplayBudget = NewReplayBudget(DefaultReplayBudget)

// ProcessReplayBudget is the budget every server of the process shares unless
// its Options name another: helix.mcp.replay_budget sets its limit, /metrics
// shows it (helix_mcp_replay_*).
func ProcessReplayBudget() *ReplayBudget { return processReplayBudget }

// SetLimit changes the limit; events kept already stay until their sessions trim
// them.
func (b *ReplayBudget) SetLimit(limit int64) { b.limit.Store(limit) }

// Limit is the budget in bytes.
func (b *ReplayBudget) Limit() int64 { return b.limit.Load() }

// Used is the event data kept now, in bytes.
func (b *ReplayBudget) Used() int64 { return b.used.Load() }

// Dropped counts the events not kept for replay because they did not fit (the
// session's share or the budget).
func (b *ReplayBudget) Dropped() uint64 { return b.dropped.Load() }

// reserve takes n bytes of the budget, false when they do not fit.
func (b *ReplayBudget) reserve(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit.Load() {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (b *ReplayBudget) release(n int64) { b.used.Add(-n) }
