package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/management"
)

// Operating durable runs: /metrics, the manifest's durable section, GET /runs,
// and on a PostgreSQL store the replica's executor lock and the takeover of the
// runs of replicas that died (internal/durable/takeover.go).

// executorLockWait bounds the wait for this replica's executor lock at start:
// a previous process with the same id that was killed lets go of it at once.
const executorLockWait = 30 * time.Second

// durableOps is what the app keeps for operating its durable runs.
type durableOps struct {
	metrics *durable.Metrics
	mu      sync.Mutex
	lock    *durable.ExecutorLock // PostgreSQL: held from Launch to Stop (mu)
	cancel  context.CancelFunc    // stops the takeover campaign
	done    chan struct{}
}

// buildDurableOps prepares the durable metrics when a workflow is durable.
func (a *App) buildDurableOps() {
	if a.anyDurable() {
		a.durableOps = &durableOps{metrics: durable.NewMetrics(runsCounter{a})}
	}
}

// durableCollectors are the durable families of /metrics; none when nothing is
// durable.
func (a *App) durableCollectors() []prometheus.Collector {
	if a.durableOps == nil {
		return nil
	}
	return a.durableOps.metrics.Collectors()
}

// runsCounter counts the runs of the app's store while it is open.
type runsCounter struct{ a *App }

func (c runsCounter) CountByState(ctx context.Context) (map[durable.State]int, error) {
	if sc, ok := durable.For(c.a.hc).(durable.StateCounter); ok {
		return sc.CountByState(ctx)
	}
	return map[durable.State]int{}, nil // not started yet, or stopped
}

// durableRuns is the store GET /runs reads; nil when none is open.
func (a *App) durableRuns() durable.Runs { return durable.For(a.hc) }

// beforeDurableLaunch runs just before the runtime recovers its pending runs:
// its metrics are set, and on PostgreSQL this replica takes its executor lock
// (a replica whose lock is free is dead to the others, so the lock comes first).
func (a *App) beforeDurableLaunch() error {
	if a.durableOps == nil || a.durable == nil {
		return nil
	}
	a.durable.SetMetrics(a.durableOps.metrics)
	store := a.cfg.Helix.DurableStore
	if store == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), executorLockWait)
	defer cancel()
	id := a.durable.ExecutorID()
	lock, err := durable.HoldExecutor(ctx, store, id, time.Second, a.logger)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("another process holds the executor lock of replica %q after %v: give each replica its own helix.replica_id", id, executorLockWait)
	}
	if err != nil {
		return &config.Error{Pos: a.cfg.Helix.DurablePos, Path: "helix.replica_id", Msg: err.Error()}
	}
	a.durableOps.lock = lock
	return nil
}

// afterDurableLaunch starts the takeover campaign on a PostgreSQL store: the
// elected replica hands the runs of dead replicas back to the queue.
func (a *App) afterDurableLaunch() {
	ops := a.durableOps
	if ops == nil || a.durable == nil || ops.lock == nil {
		return
	}
	tk := &durable.Takeover{URL: a.cfg.Helix.DurableStore, Self: a.durable.ExecutorID(),
		Runs: durable.DBOSPending{Client: a.durable.DBOS()}, Taken: ops.metrics.TookOver, Log: a.logger}
	ctx, cancel := context.WithCancel(context.Background())
	ops.cancel, ops.done = cancel, make(chan struct{})
	relocked := make(chan struct{})
	go func() {
		defer close(ops.done)
		if err := tk.Run(ctx); err != nil {
			a.logger.Error("durable: replica takeover is off", "error", err)
		}
		<-relocked
	}()
	go func() {
		defer close(relocked)
		a.keepExecutorLock(ctx)
	}()
}

// keepExecutorLock takes the executor lock again whenever its session breaks
// (a network cut to the database): without it the others would take this
// replica for dead at every sweep, and hand back the runs it is running.
func (a *App) keepExecutorLock(ctx context.Context) {
	ops := a.durableOps
	for {
		ops.mu.Lock()
		lost := ops.lock.Lost()
		ops.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-lost:
		}
		lock, err := durable.HoldExecutor(ctx, a.cfg.Helix.DurableStore, a.durable.ExecutorID(), time.Second, a.logger)
		if err != nil {
			return // ctx ended
		}
		a.logger.Info("durable: this replica holds its executor lock again", "executor", a.durable.ExecutorID())
		ops.mu.Lock()
		old := ops.lock
		ops.lock = lock
		ops.mu.Unlock()
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = old.Close(closeCtx)
		cancel()
	}
}

// afterDurableStop ends the takeover campaign and, once the runtime has stopped,
// releases the executor lock: the runs it left pending are then the others' to
// take over.
func (a *App) afterDurableStop() {
	ops := a.durableOps
	if ops == nil {
		return
	}
	if ops.cancel != nil {
		ops.cancel()
		<-ops.done
		ops.cancel = nil
	}
	ops.mu.Lock()
	lock := ops.lock
	ops.lock = nil
	ops.mu.Unlock()
	if lock != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = lock.Close(ctx)
		cancel()
	}
}

// manifestDurable is the manifest's durable section: the store's kind, this
// replica's executor id while it runs, and the durable workflows; never the
// store's URL or path.
func (a *App) manifestDurable() *management.Durable {
	if a.durableOps == nil {
		return nil
	}
	d := &management.Durable{Store: "sqlite"}
	if a.cfg.Helix.DurableStore != "" {
		d.Store = "postgres"
	}
	if rt, ok := durable.For(a.hc).(*durable.Runtime); ok {
		d.Executor = rt.ExecutorID()
	}
	for _, wf := range a.hc.Workflows() {
		if wf.Durable {
			d.Workflows = append(d.Workflows, wf.ID)
		}
	}
	sort.Strings(d.Workflows)
	return d
}
