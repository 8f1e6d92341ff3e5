package app

import (
	"context"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
)

// Durable runs (internal/durable): a workflow, tool or agent declared
// durable: true (or all of them, helix.durable) runs through the app's durable
// runtime, which checkpoints each step so that a run cut off by a crash or a
// restart goes on at the next start. The runtime opens its store at Start,
// only when something is durable, and recovers the runs left pending once the
// engine is up.

// durableShutdownGrace is what the runtime gets to stop after the engine did.
const durableShutdownGrace = 2 * time.Second

// markDurable makes wf durable when its declaration or helix.durable says so.
func (a *App) markDurable(wf *engine.Workflow, declared bool) {
	if wf != nil && (declared || a.cfg.Helix.Durable) {
		wf.Durable = true
	}
}

// anyDurable reports whether a workflow of the app is durable.
func (a *App) anyDurable() bool {
	for _, wf := range a.hc.Workflows() {
		if wf.Durable {
			return true
		}
	}
	return false
}

// openDurable opens the durable runtime before the engine starts, so that the
// first exchange of a durable trigger finds it.
func (a *App) openDurable(ctx context.Context) error {
	if !a.anyDurable() {
		return nil
	}
	h := a.cfg.Helix
	rt, err := durable.New(ctx, durable.Options{
		AppName:       a.hc.Name(),
		DataDir:       h.DataDir,
		Store:         h.DurableStore,
		ReplicaID:     h.ReplicaID,
		MaxCheckpoint: int(h.DurableMaxCheckpoint),
		Logger:        a.logger,
	})
	if err != nil {
		return err
	}
	a.durable = rt
	a.hc.SetDurableRunner(rt)
	durable.Attach(a.hc, rt)
	return nil
}

// launchDurable recovers the runs left pending, once the engine runs.
func (a *App) launchDurable() error {
	if a.durable == nil {
		return nil
	}
	return a.durable.Launch(a.hc)
}

// stopDurableAt stops the runtime when the engine's drain is about to give up
// (before producers stop under the runs still going): the runs it cuts off stay
// pending, their step unrecorded, for the next start. It returns the function
// that stops the runtime after the engine stopped.
func (a *App) stopDurableAt(drain time.Duration) func() {
	if a.durable == nil {
		return func() {}
	}
	rt := a.durable
	early := time.AfterFunc(max(drain-durableShutdownGrace, 0), func() { rt.Shutdown(durableShutdownGrace) })
	return func() {
		early.Stop()
		rt.Shutdown(durableShutdownGrace)
		durable.Attach(a.hc, nil)
	}
}
