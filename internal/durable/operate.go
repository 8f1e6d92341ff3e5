package durable

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tracing"
)

// What operators use: helix runs opens the store with a Runtime it never
// launches (it runs no workflow, and must not recover the runs of the instance
// whose store it opened); /metrics counts runs by state.

// dbosInternalQueue is the queue every launched DBOS process listens on (DBOS
// puts resumed and recovered workflows there).
const dbosInternalQueue = "_dbos_internal_queue"

// isLaunched reports whether this runtime runs workflows.
func (rt *Runtime) isLaunched() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.launched
}

// enqueueContinuation hands segment seg of a run to the queue, for whichever
// instance of the application runs (or the next to start) to execute: what a
// resolution does from a runtime that runs nothing.
func (rt *Runtime) enqueueContinuation(runID string, seg int, in RunInput) error {
	_, err := dbos.Enqueue[RunOutput](rt.dctx, dbosInternalQueue, interpreterName, in,
		dbos.WithEnqueueWorkflowID(segmentID(runID, seg)))
	if err != nil {
		return fmt.Errorf("durable: continuing run %s: %s", runID, redactURL(err.Error(), rt.opts.Store))
	}
	return nil
}

// ExecutorID is the id this runtime executes runs under ("local" for the
// embedded store): the owner recorded with each run it executes.
func (rt *Runtime) ExecutorID() string { return rt.dctx.GetExecutorID() }

// StoreKind is "postgres" or "sqlite".
func (rt *Runtime) StoreKind() string {
	if rt.pg {
		return "postgres"
	}
	return "sqlite"
}

var _ StateCounter = (*Runtime)(nil)

// CountByState counts the runs of the store by state, in one query.
func (rt *Runtime) CountByState(ctx context.Context) (map[State]int, error) {
	rows, err := rt.db.QueryContext(ctx, rt.q(`SELECT state, COUNT(*) FROM helix_runs GROUP BY state`))
	if err != nil {
		return nil, fmt.Errorf("durable store: %w", err)
	}
	defer rows.Close()
	out := map[State]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("durable store: %w", err)
		}
		out[State(s)] = n
	}
	return out, rows.Err()
}

// OptionsFor returns the runtime options of an application's helix: block, so
// that the application and helix runs open the same store under the same name.
func OptionsFor(h config.HelixConfig, logger *slog.Logger) Options {
	name := h.Name
	if name == "" {
		name = "helix" // the engine's name when helix.name is not set
	}
	return Options{AppName: name, DataDir: h.DataDir, Store: h.DurableStore, ReplicaID: h.ReplicaID,
		MaxCheckpoint: int(h.DurableMaxCheckpoint), Logger: logger}
}

// EmbeddedStorePath is where the embedded store of dataDir is.
func EmbeddedStorePath(dataDir string) string {
	if dataDir == "" {
		dataDir = config.DefaultDataDir
	}
	return filepath.Join(dataDir, "durable.db")
}

// SetMetrics makes the runtime observe checkpoints and resumptions into m; call
// it before Launch.
func (rt *Runtime) SetMetrics(m *Metrics) { rt.metrics = m }

// runClock times one execution of a segment: each step's checkpoint (the time
// DBOS and the snapshot took around the step itself), and, when the execution
// replayed recorded checkpoints (a run resumed after a crash, a takeover or
// helix runs resume), the time from its start to the first step that runs anew.
type runClock struct {
	began    time.Time
	replayed bool // a step came back from its checkpoint
	resumed  bool // the resumption was observed
}

// ran is called as a step runs anew.
func (c *runClock) ran(m *Metrics) {
	if c.replayed && !c.resumed {
		c.resumed = true
		m.ObserveResume(time.Since(c.began))
	}
}

// observe is called after a step's DBOS step returned: called says whether the
// step ran (or was replayed), ran how long it took itself.
func (c *runClock) observe(m *Metrics, began time.Time, called bool, ran time.Duration) {
	if !called {
		c.replayed = true
		return
	}
	m.ObserveCheckpoint(time.Since(began) - ran)
}

// traceContext is ctx for one execution of a run's segment: the run's first
// execution continues the trace of the span that started it (ref); every later
// one (after a crash, on another replica, after helix runs resume or a wait)
// starts a trace of its own whose exchange span links to that span, since the
// first attempt's spans were exported long ago, maybe by another process.
func traceContext(ctx context.Context, ref string, first bool) context.Context {
	if ref == "" {
		return ctx
	}
	if first {
		parent, _ := tracing.ExtractMeta(ctx, map[string]any{"traceparent": ref})
		return parent
	}
	return tracing.LinkTo(ctx, ref)
}

// lockSchema serialises the creation of the store's tables (helix_runs, and
// DBOS's migrations) among replicas that start together on one PostgreSQL
// database: PostgreSQL fails concurrent CREATE … IF NOT EXISTS of the same
// object with a duplicate key. It holds a session advisory lock on a
// connection of the pool until unlock; the embedded store needs none.
func (rt *Runtime) lockSchema(ctx context.Context) (unlock func(), err error) {
	if !rt.pg {
		return func() {}, nil
	}
	conn, err := rt.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("durable store: %s", redactURL(err.Error(), rt.opts.Store))
	}
	key := ExecutorLockKey("\x00schema") // no executor id has a NUL
	// Tried, not waited for: a session waiting in pg_advisory_lock is a
	// running statement, which DBOS's CREATE INDEX CONCURRENTLY in the holder's
	// migrations would wait for in turn.
	for {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got); err != nil {
			conn.Release()
			return nil, fmt.Errorf("durable store: %s", redactURL(err.Error(), rt.opts.Store))
		}
		if got {
			break
		}
		select {
		case <-ctx.Done():
			conn.Release()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)
		conn.Release()
	}, nil
}
