package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // the embedded store
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/arvenza/helix/pkg/engine"
)

// The runtime: one DBOS context per app, which owns the store (DBOS's tables
// and helix_runs, in one database) and runs every durable run through one
// registered workflow function, the interpreter (run.go). DBOS brings the
// checkpoints (one DBOS step per top-level Helix step), run ids that start a
// run once, and recovery of the runs a crash cut off.

// ApplicationVersion is the version DBOS records with each run. DBOS recovers
// only the runs of its own version, and defaults to a hash of the binary: a
// redeploy would orphan every pending run. It changes only when the checkpoint
// format does.
const ApplicationVersion = "helix-durable-1"

// DefaultMaxCheckpoint bounds one step's checkpoint when the configuration
// does not (helix.durable_max_checkpoint).
const DefaultMaxCheckpoint = 4 << 20

// interpreterName is the DBOS workflow name of the interpreter.
const interpreterName = "helix.run"

// Options configure a [Runtime].
type Options struct {
	// AppName names the app in the store (helix.name).
	AppName string
	// DataDir is helix.data_dir: the embedded store is <DataDir>/durable.db.
	DataDir string
	// Store is helix.durable_store: a PostgreSQL URL shared by replicas; ""
	// means the embedded SQLite store.
	Store string
	// ReplicaID is helix.replica_id: which replica's runs this process
	// recovers at start; "" means the host name (the embedded store: "local").
	ReplicaID string
	// MaxCheckpoint bounds one step's checkpoint; 0 means DefaultMaxCheckpoint.
	MaxCheckpoint int
	// StoreOutage bounds how long a run waits for a store that fails with a
	// transient error before the run fails (outage.go); 0 means
	// DefaultStoreOutage.
	StoreOutage time.Duration
	// BusyTimeout is how long a write to the embedded store waits for another
	// connection's write lock before it fails (and is retried as a transient
	// error); 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	Logger      *slog.Logger
}

// Runtime runs durable workflows: the [Runs] of an app.
type Runtime struct {
	opts   Options
	dctx   dbos.Context
	db     *sql.DB
	pg     bool
	pool   *pgxpool.Pool // PostgreSQL only; db is over it
	logger *slog.Logger

	// interpreter is the registered workflow function (run.go).
	interpreter dbos.Workflow[RunInput, RunOutput]

	mu       sync.Mutex
	ec       *engine.Context
	launched bool
	// ready is closed at Launch: a Start before it waits (a trigger may
	// deliver before the runtime recovered its pending runs).
	ready chan struct{}
	// closed is closed at Shutdown: Await calls end; stopping ends then too.
	closed   chan struct{}
	stopping context.Context
	stop     context.CancelFunc
	shutdown sync.Once
	onPark   []func(Run)
	metrics  *Metrics // operate.go: SetMetrics; nil observes nothing
	// storeFault, set by tests only, fails the checkpoint of a run's step as
	// the store would (export_test.go).
	storeFault func(run string, step int) error
	// outages are the segments waiting for the store to answer (outage.go).
	outages outages
	// waiters are the Await calls of this process, by run id: woken when a
	// run of this process parks or ends (runs of other replicas are polled).
	waiters map[string][]chan struct{}
}

// New opens the store (creating it and its tables when new) and registers the
// interpreter. Call Launch once the engine is built.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.MaxCheckpoint <= 0 {
		opts.MaxCheckpoint = DefaultMaxCheckpoint
	}
	if opts.StoreOutage <= 0 {
		opts.StoreOutage = DefaultStoreOutage
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	rt := &Runtime{opts: opts, logger: opts.Logger.With("component", "durable"), waiters: map[string][]chan struct{}{},
		ready: make(chan struct{}), closed: make(chan struct{})}
	rt.stopping, rt.stop = context.WithCancel(context.Background())
	cfg := dbos.Config{
		AppName:            appName(opts.AppName),
		ApplicationVersion: ApplicationVersion,
		Logger:             opts.Logger.With("component", "durable", "engine", "dbos"),
	}
	if opts.Store == "" {
		dir := opts.DataDir
		if dir == "" {
			dir = ".helix"
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("durable store: %w", err)
		}
		path, err := filepath.Abs(filepath.Join(dir, "durable.db"))
		if err != nil {
			return nil, fmt.Errorf("durable store: %w", err)
		}
		// Both connections wait for SQLite's write lock before failing with
		// SQLITE_BUSY: on a busy disk (fsyncs of other processes) a lock can
		// be held for seconds, and a write that fails so is retried after a
		// pause (outage.go) instead of at once. DBOS keeps a busy_timeout the
		// URL names.
		busy := strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)
		cfg.DatabaseURL = "sqlite:file:" + path + "?_pragma=busy_timeout(" + busy + ")"
		// One process owns an embedded store: its runs are always its own.
		cfg.ExecutorID = "local"
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout("+busy+")&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
		if err != nil {
			return nil, fmt.Errorf("durable store %s: %w", path, err)
		}
		rt.db = db
	} else {
		cfg.DatabaseURL = opts.Store
		cfg.ExecutorID = opts.ReplicaID
		if cfg.ExecutorID == "" {
			host, err := os.Hostname()
			if err != nil {
				return nil, fmt.Errorf("durable store: no helix.replica_id and no host name: %w", err)
			}
			cfg.ExecutorID = host
		}
		pool, err := pgxpool.New(ctx, opts.Store)
		if err != nil {
			return nil, fmt.Errorf("durable store: %s", redactURL(err.Error(), opts.Store))
		}
		rt.pool, rt.db, rt.pg = pool, stdlib.OpenDBFromPool(pool), true
	}
	unlock, err := rt.lockSchema(ctx) // operate.go: replicas starting together
	if err != nil {
		rt.closeDB()
		return nil, err
	}
	if err := rt.createTables(ctx); err != nil {
		unlock()
		rt.closeDB()
		return nil, err
	}
	// The runtime lives until Shutdown, not as long as the context the app was
	// started with (often one bounded by a start timeout): its values are kept,
	// its end is not.
	dctx, err := dbos.NewContext(context.WithoutCancel(ctx), cfg)
	unlock()
	if err != nil {
		rt.closeDB()
		return nil, fmt.Errorf("durable store: %s", redactURL(err.Error(), opts.Store))
	}
	rt.dctx = dctx
	rt.interpreter = rt.interpret
	dbos.RegisterWorkflow(dctx, rt.interpreter, dbos.WithWorkflowName(interpreterName))
	for _, ext := range registeredExtensions() {
		if err := ext(rt, dctx); err != nil {
			rt.closeDB()
			return nil, err
		}
	}
	return rt, nil
}

var (
	extMu      sync.Mutex
	extensions []Extension
)

// RegisterExtension adds ext to every runtime made from now on, before it
// launches (the waits register their timer workflow so, in an init function).
func RegisterExtension(ext Extension) {
	extMu.Lock()
	extensions = append(extensions, ext)
	extMu.Unlock()
}

func registeredExtensions() []Extension {
	extMu.Lock()
	defer extMu.Unlock()
	return append([]Extension(nil), extensions...)
}

// appName is name as DBOS accepts it (lower case letters, digits, - and _).
func appName(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, name)
	for len(name) < 3 {
		name += "_"
	}
	return name
}

// redactURL removes the store URL (it may hold a password) from msg.
func redactURL(msg, url string) string {
	if url == "" {
		return msg
	}
	return strings.ReplaceAll(msg, url, "helix.durable_store")
}

// Extension is what another part of Helix adds to the runtime before it starts
// (the waits' timers): it may register DBOS workflows and queues on dctx.
type Extension func(rt *Runtime, dctx dbos.Context) error

// Extend runs ext now, before Launch: DBOS takes registrations only then.
func (rt *Runtime) Extend(ext Extension) error {
	rt.mu.Lock()
	launched := rt.launched
	rt.mu.Unlock()
	if launched {
		return errors.New("durable: the runtime is launched already; extend it before Launch")
	}
	return ext(rt, rt.dctx)
}

// OnPark registers f, called (in the run's goroutine, keep it short) each time
// a run of this process parks, with the run as it parked.
func (rt *Runtime) OnPark(f func(Run)) {
	rt.mu.Lock()
	rt.onPark = append(rt.onPark, f)
	rt.mu.Unlock()
}

// DBOS returns the runtime's DBOS context, for the parts that start DBOS
// workflows of their own (registered through Extend).
func (rt *Runtime) DBOS() dbos.Context { return rt.dctx }

// DefaultBusyTimeout is how long a write to the embedded durable store waits
// for another connection's write to finish when Options.BusyTimeout does not
// say.
const DefaultBusyTimeout = 60 * time.Second

// Launch starts running: the runs a crash left pending are recovered now, on
// the workflows of ec.
func (rt *Runtime) Launch(ec *engine.Context) error {
	rt.mu.Lock()
	rt.ec = ec
	rt.launched = true
	rt.mu.Unlock()
	if err := dbos.Launch(rt.dctx); err != nil {
		return fmt.Errorf("durable: %s", redactURL(err.Error(), rt.opts.Store))
	}
	close(rt.ready)
	return rt.repairContinuations(context.Background())
}

// Shutdown stops running: runs in flight stay pending, for the next start (or
// another replica) to take up.
func (rt *Runtime) Shutdown(timeout time.Duration) {
	rt.shutdown.Do(func() {
		close(rt.closed)
		rt.stop()
		rt.outages.stop() // no revive after the store is closed
		if err := dbos.Shutdown(rt.dctx, timeout); err != nil {
			rt.logger.Warn("durable: shutdown", "error", err)
		}
		rt.closeDB()
	})
}

// ErrShutdown is the error of a call cut off because the runtime stopped: the
// run goes on at the next start.
var ErrShutdown = errors.New("durable: stopped; the run goes on from its last checkpoint at the next start")

// launchedEngine waits for Launch and returns the engine.
func (rt *Runtime) launchedEngine(ctx context.Context) (*engine.Context, error) {
	select {
	case <-rt.ready:
		return rt.engine(), nil
	case <-rt.closed:
		return nil, ErrShutdown
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (rt *Runtime) closeDB() {
	if rt.db != nil {
		_ = rt.db.Close()
	}
	if rt.pool != nil {
		rt.pool.Close()
	}
}

// engine returns the engine runs run on.
func (rt *Runtime) engine() *engine.Context {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.ec
}
