package app

import (
	"context"
	"time"

	"github.com/arvenza/helix/internal/cluster"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/management"
)

// clusterState is helix.cluster at run time: the elector and the goroutine that
// runs the singleton triggers while this replica leads.
type clusterState struct {
	leader *cluster.Postgres
	cancel context.CancelFunc
	done   chan struct{}
}

// buildCluster checks helix.cluster.leader and, when it is set, makes the engine
// hold back singleton triggers (timer://, file://, postgres:// polling) until this
// replica is elected. Nothing connects until Start.
func (a *App) buildCluster() {
	cc := a.cfg.Helix.Cluster
	if cc.Leader == "" {
		return
	}
	name := cc.Name
	if name == "" {
		name = a.hc.Name()
	}
	l, err := cluster.NewPostgres(cc.Leader, cluster.PostgresOptions{Name: name, LockID: cc.LockID,
		RetryInterval: cc.RetryInterval, CheckInterval: cc.CheckInterval, CheckTimeout: cc.CheckTimeout, Logger: a.logger})
	if err != nil {
		a.errs = append(a.errs, &config.Error{Pos: cc.LeaderPos, Path: "helix.cluster.leader", Msg: err.Error(),
			Hint: "write postgres://user:${env:PGPASSWORD}@host:5432/database"})
		return
	}
	a.cluster = &clusterState{leader: l}
	a.hc.DeferSingletons()
}

// startCluster campaigns in the background: while this replica leads, the
// singleton triggers run; when the leadership is lost they stop (the exchange in
// flight may finish within helix.shutdown_timeout) before the lock is released.
// A database that cannot be reached is retried with a warning: the replica serves
// everything else meanwhile.
func (a *App) startCluster() {
	cs := a.cluster
	if cs == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cs.cancel, cs.done = cancel, make(chan struct{})
	ids := a.hc.SingletonWorkflows()
	a.logger.Info("cluster: campaigning for leadership; singleton triggers run on the leader only",
		"cluster", cs.leader.Name(), "workflows", ids)
	go func() {
		defer close(cs.done)
		cluster.Run(ctx, cs.leader, a.retryPause(), func(term context.Context) error {
			if err := a.hc.StartSingletons(term); err != nil {
				a.logger.Error("cluster: the singleton triggers failed to start; resigning the leadership", "error", err)
				return err
			}
			if a.hc.SingletonsRunning() {
				a.logger.Info("cluster: singleton triggers started on this replica", "workflows", ids)
			}
			<-term.Done()
			sctx, cancel := context.WithTimeout(context.Background(), a.ShutdownTimeout())
			defer cancel()
			err := a.hc.StopSingletons(sctx)
			if ctx.Err() == nil { // not Stop, which logs its own
				a.logger.Warn("cluster: singleton triggers stopped on this replica", "workflows", ids,
					"cause", context.Cause(term), "stop_error", err)
			}
			return nil
		})
	}()
}

// retryPause is how long a replica whose singleton triggers failed to start waits
// before campaigning again.
func (a *App) retryPause() time.Duration {
	if d := a.cfg.Helix.Cluster.RetryInterval; d > 0 {
		return d
	}
	return cluster.DefaultRetryInterval
}

// stopCluster ends the campaign and releases the lock; Stop calls it after the
// engine stopped every trigger, so the next leader starts after this one stopped.
func (a *App) stopCluster() {
	cs := a.cluster
	if cs == nil || cs.cancel == nil {
		return
	}
	cs.cancel()
	<-cs.done
}

// IsLeader reports whether this replica is the cluster's leader; without
// helix.cluster.leader every replica runs every trigger and IsLeader is true.
func (a *App) IsLeader() bool {
	if a.cluster == nil {
		return true
	}
	return a.cluster.leader.IsLeader()
}

// clusterMetrics is this replica's standing for /metrics (helix_cluster_leader,
// helix_cluster_leader_terms_total); nil without helix.cluster.leader.
func (a *App) clusterMetrics() *management.ClusterMetrics {
	if a.cluster == nil {
		return nil
	}
	l := a.cluster.leader
	return &management.ClusterMetrics{Cluster: l.Name(), Leader: l.IsLeader(), Terms: l.Terms()}
}
