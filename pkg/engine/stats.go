package engine

import (
	"sort"
	"sync/atomic"
	"time"
)

// workflowCounters are the running totals of one workflow id. They live in the
// Context by id (not in the runtime workflow) so that a workflow removed and added
// again keeps counting, as monitoring expects of a counter.
type workflowCounters struct {
	exchanges atomic.Uint64
	failed    atomic.Uint64
	nanos     atomic.Int64
}

// WorkflowStats are the totals of one workflow since the context was created.
type WorkflowStats struct {
	ID        string
	Exchanges uint64        // exchanges that went through the pipeline
	Failed    uint64        // of those, the ones that ended with an error
	Duration  time.Duration // summed pipeline time of all exchanges
}

// Stats is a snapshot of the engine's counters for monitoring.
type Stats struct {
	InFlight  int64           // exchanges running a workflow pipeline right now
	Workflows []WorkflowStats // by id
}

// Stats returns the current counters. Each value is read atomically; the snapshot
// as a whole is not a single instant, which monitoring does not need.
func (c *Context) Stats() Stats {
	c.mu.Lock()
	ids := make([]string, 0, len(c.counters))
	for id := range c.counters {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := Stats{InFlight: int64(c.inflight.Count()), Workflows: make([]WorkflowStats, 0, len(ids))}
	for _, id := range ids {
		wc := c.counters[id]
		out.Workflows = append(out.Workflows, WorkflowStats{ID: id, Exchanges: wc.exchanges.Load(),
			Failed: wc.failed.Load(), Duration: time.Duration(wc.nanos.Load())})
	}
	c.mu.Unlock()
	return out
}

// countersLocked returns the counters of workflow id, creating them; c.mu is held.
func (c *Context) countersLocked(id string) *workflowCounters {
	if c.counters == nil {
		c.counters = map[string]*workflowCounters{}
	}
	wc, ok := c.counters[id]
	if !ok {
		wc = &workflowCounters{}
		c.counters[id] = wc
	}
	return wc
}
