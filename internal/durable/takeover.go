package durable

// Replica takeover on a shared PostgreSQL store.
//
// DBOS recovers, at start, only the runs of its own executor id; taking over the
// runs of a replica that died is not in its open-source edition. Helix supplies
// the liveness: every replica holds a session-level advisory lock named after its
// executor id on a connection of its own ([HoldExecutor]) for as long as it lives,
// and PostgreSQL releases it the moment the session ends (a process that exits or
// is killed has its socket closed by the kernel). The cluster's leader
// ([Takeover.Run], elected like helix.cluster's singleton triggers) looks every
// interval at the executors that own runs in progress; an executor whose lock it
// can take is dead, and its runs are handed back to the queue ([PendingRuns.Resume],
// dbos.ResumeWorkflows), where any live replica picks them up and goes on from
// their last checkpoint.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/cluster"
)

// PendingRuns is what takeover needs of the store: the runs being executed now
// (not parked, not ended, not queued), by the executor that runs them, and a way
// to hand runs back to the queue.
type PendingRuns interface {
	// Pending returns, per executor id, the ids of the store's executions
	// (DBOS workflow ids) that executor is running.
	Pending(ctx context.Context) (map[string][]string, error)
	// Resume puts the executions back on the queue for any replica to run from
	// their last checkpoint.
	Resume(ctx context.Context, ids []string) error
}

// ExecutorLockKey is the advisory lock key of an executor id: the FNV-1a 64-bit
// hash of "helix/durable/executor/" + id, as PostgreSQL's bigint.
func ExecutorLockKey(executorID string) int64 {
	h := fnv.New64a()
	h.Write([]byte("helix/durable/executor/" + executorID))
	return int64(h.Sum64())
}

// DefaultTakeoverInterval is how often the leader looks for dead executors.
const DefaultTakeoverInterval = 2 * time.Second

// ExecutorLock is a replica's claim that its executor id is alive: a session
// advisory lock on a connection that nothing else uses.
type ExecutorLock struct {
	id   string
	key  int64
	log  *slog.Logger
	mu   sync.Mutex
	conn *pgx.Conn
	end  chan struct{}
	done chan struct{}
	lost chan struct{} // closed when the lock's session broke
}

// HoldExecutor takes the executor lock of id on the database of url, retrying
// every retry while another session holds it (the previous process with this id
// whose session PostgreSQL has not closed yet, or a leader probing it right now),
// and returns once it holds it or ctx ends. A replica must hold its lock before it
// runs durable work: a run whose executor holds no lock is taken over.
func HoldExecutor(ctx context.Context, url, id string, retry time.Duration, log *slog.Logger) (*ExecutorLock, error) {
	if id == "" {
		return nil, errors.New("durable: the executor id is empty; set helix.replica_id")
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("durable: the store URL does not parse: %s", redactedParseError(err))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = cluster.DefaultConnectTimeout
	}
	// Operators find the lock's session in pg_stat_activity by this name.
	cfg.RuntimeParams["application_name"] = "helix durable executor " + id
	if retry <= 0 {
		retry = time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	l := &ExecutorLock{id: id, key: ExecutorLockKey(id), log: log}
	warned := false
	for {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			var got bool
			err = conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", l.key).Scan(&got)
			if err == nil && got {
				l.conn = conn
				l.end, l.done, l.lost = make(chan struct{}), make(chan struct{}), make(chan struct{})
				go l.watch()
				return l, nil
			}
			_ = conn.Close(context.WithoutCancel(ctx))
			if err == nil && !warned {
				warned = true
				log.Warn("durable: another session holds this executor id; waiting for it to end (two replicas with one helix.replica_id?)",
					"executor", id)
			}
		}
		if err != nil && !warned {
			warned = true
			log.Warn("durable: cannot take this replica's executor lock; retrying", "executor", id, "error", err)
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// watch pings the lock's session; when it breaks, the lock is gone (another
// replica may take over this one's runs: their checkpoints are fenced by DBOS, the
// step in flight may run twice) and Lost is closed.
func (l *ExecutorLock) watch() {
	defer close(l.done)
	t := time.NewTicker(cluster.DefaultCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-l.end:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), cluster.DefaultCheckTimeout)
		l.mu.Lock()
		err := l.conn.Ping(ctx)
		l.mu.Unlock()
		cancel()
		if err != nil {
			l.log.Error("durable: this replica's executor lock is lost; other replicas may take over its runs",
				"executor", l.id, "error", err)
			close(l.lost)
			return
		}
	}
}

// Lost is closed when the lock's session broke.
func (l *ExecutorLock) Lost() <-chan struct{} { return l.lost }

// Close releases the lock (ending its session).
func (l *ExecutorLock) Close(ctx context.Context) error {
	close(l.end)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn.Close(ctx)
}

// Takeover is the leader's side of replica takeover.
type Takeover struct {
	// URL is the store's PostgreSQL URL.
	URL string
	// Self is this replica's executor id; its own runs are never taken over.
	Self string
	// Runs lists and resumes the store's executions.
	Runs PendingRuns
	// Interval is the pause between two sweeps; 0 means DefaultTakeoverInterval.
	Interval time.Duration
	// Taken, when set, is called after the runs of a dead executor were handed
	// back to the queue.
	Taken func(executor string, ids []string)
	Log   *slog.Logger
}

// Sweep looks once for dead executors on probe (a connection of the leader's own)
// and hands their runs back to the queue. It returns the runs it took over, by
// executor. An executor whose lock is held is alive and left alone; one whose lock
// probe could take is dead: its lock is kept while its runs are resumed, so that a
// replica restarting with that id waits until the takeover is done.
func (t *Takeover) Sweep(ctx context.Context, probe *pgx.Conn) (map[string][]string, error) {
	pending, err := t.Runs.Pending(ctx)
	if err != nil {
		return nil, fmt.Errorf("durable takeover: list the runs in progress: %w", err)
	}
	executors := make([]string, 0, len(pending))
	for ex := range pending {
		if ex != t.Self && len(pending[ex]) > 0 {
			executors = append(executors, ex)
		}
	}
	sort.Strings(executors)
	var taken map[string][]string
	var errs []error
	for _, ex := range executors {
		key := ExecutorLockKey(ex)
		var free bool
		if err := probe.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&free); err != nil {
			return taken, fmt.Errorf("durable takeover: probe executor %q: %w", ex, err)
		}
		if !free {
			continue // alive
		}
		ids := pending[ex]
		err := t.Runs.Resume(ctx, ids)
		if _, uerr := probe.Exec(ctx, "SELECT pg_advisory_unlock($1)", key); uerr != nil {
			return taken, fmt.Errorf("durable takeover: release the probe of executor %q: %w", ex, uerr)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("durable takeover: resume the %d runs of executor %q: %w", len(ids), ex, err))
			continue
		}
		if taken == nil {
			taken = map[string][]string{}
		}
		taken[ex] = ids
		t.log().Warn("durable: took over the runs of a replica that is gone", "executor", ex, "runs", len(ids))
		if t.Taken != nil {
			t.Taken(ex, ids)
		}
	}
	return taken, errors.Join(errs...)
}

func (t *Takeover) log() *slog.Logger {
	if t.Log != nil {
		return t.Log
	}
	return slog.Default()
}

// Lead sweeps every Interval until term ends; it is the leader's work for one
// term of an election ([cluster.Run]). A sweep that fails is logged and tried
// again at the next tick.
func (t *Takeover) Lead(term context.Context) error {
	cfg, err := pgx.ParseConfig(t.URL)
	if err != nil {
		return fmt.Errorf("durable takeover: the store URL does not parse: %s", redactedParseError(err))
	}
	cfg.RuntimeParams["application_name"] = "helix durable takeover"
	probe, err := pgx.ConnectConfig(term, cfg)
	if err != nil {
		return fmt.Errorf("durable takeover: connect: %w", err)
	}
	defer func() { _ = probe.Close(context.WithoutCancel(term)) }()
	interval := t.Interval
	if interval <= 0 {
		interval = DefaultTakeoverInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if _, err := t.Sweep(term, probe); err != nil && term.Err() == nil {
			t.log().Warn("durable: takeover sweep failed; trying again", "error", err)
			if probe.IsClosed() {
				return err // a new term reconnects
			}
		}
		select {
		case <-term.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Run campaigns for the takeover leadership on the store's database until ctx
// ends, sweeping while this replica leads. One replica sweeps at a time; when it
// dies another is elected within the election's retry interval.
func (t *Takeover) Run(ctx context.Context) error {
	l, err := cluster.NewPostgres(t.URL, cluster.PostgresOptions{Name: "helix/durable/takeover", Logger: t.Log})
	if err != nil {
		return err
	}
	cluster.Run(ctx, l, time.Second, t.Lead)
	return nil
}

// redactedParseError is pgx's complaint about a URL without the URL it quotes
// (which holds the password).
func redactedParseError(err error) string {
	msg := err.Error()
	for i := 0; i+3 <= len(msg); i++ {
		if msg[i:i+3] == "`: " {
			return msg[i+3:]
		}
	}
	return "it does not parse"
}
