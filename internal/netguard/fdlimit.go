package netguard

import (
	"sync/atomic"
)

// File descriptors: every open connection holds one, and so does every file,
// outbound connection (databases, HTTP calls, MCP peers) and the runtime's own
// poller. When a process runs out, accept fails for every listener at once:
// /healthz stops answering because of idle connections to another port. So the
// connection caps derive from RLIMIT_NOFILE:
//
//   - a reserve (a quarter of the limit, at least 64 and at most 4096) is kept
//     for the management listener, outbound calls and files;
//   - the other listeners together hold at most the rest (the process budget):
//     a connection beyond it is closed at accept, like one beyond
//     max_connections;
//   - the default max_connections of one listener is at most half the budget,
//     so that one flooded listener leaves room for the others; the management
//     listener's default is at most a quarter of the reserve.
//
// Helix raises the soft limit to the hard limit at start ([RaiseFileLimit]);
// the budget is read from the limit in force when a listener opens.

const (
	minReserve = 64
	maxReserve = 4096
)

// FileBudget is how the file descriptors of the process are shared out.
type FileBudget struct {
	Limit      int // soft RLIMIT_NOFILE; 0 when unknown (no limit applies then)
	Reserve    int // kept for management, outbound calls and files
	Listeners  int // open connections all non-management listeners may hold together
	PerListen  int // default max_connections of one listener (at most DefaultMaxConnections)
	Management int // default max_connections of the management listener
}

// Budget returns the share-out of the current soft RLIMIT_NOFILE.
func Budget() FileBudget { return budgetFor(fileLimit()) }

func budgetFor(limit int) FileBudget {
	if limit <= 0 {
		return FileBudget{PerListen: DefaultMaxConnections, Management: DefaultMaxConnections}
	}
	reserve := min(max(limit/4, minReserve), maxReserve)
	listeners := max(limit-reserve, 1)
	return FileBudget{
		Limit:      limit,
		Reserve:    reserve,
		Listeners:  listeners,
		PerListen:  min(DefaultMaxConnections, max(listeners/2, 1)),
		Management: min(DefaultMaxConnections, max(reserve/4, 1)),
	}
}

// processConns counts the open connections of every listener that draws on the
// process budget (all but the management listener's). Process-wide by nature:
// file descriptors belong to the process, not to one application.
var processConns atomic.Int64

// takeProcessSlot counts one connection against the budget of max connections;
// false when the budget is spent (max <= 0: no budget).
func takeProcessSlot(max int) bool {
	if max <= 0 {
		processConns.Add(1)
		return true
	}
	for {
		n := processConns.Load()
		if n >= int64(max) {
			return false
		}
		if processConns.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func releaseProcessSlot() { processConns.Add(-1) }
