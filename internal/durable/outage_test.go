package durable_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// A durable run must not be lost to a blip of its store: it waits, pending,
// and goes on from its last checkpoint once the store answers; whoever awaits
// it keeps waiting. A store error that means a bug still fails it at once, and
// an outage that lasts fails it after a bound.

// startAppWith is startAppOn with opts (AppName, DataDir and ReplicaID are
// filled in when empty).
func startAppWith(t *testing.T, opts durable.Options, steps ...engine.Processor) *app {
	t.Helper()
	ec := engine.NewContext("t")
	if err := ec.AddWorkflow(&engine.Workflow{ID: "wf", Processors: steps, Durable: true}); err != nil {
		t.Fatal(err)
	}
	if opts.AppName == "" {
		opts.AppName = "t"
	}
	if opts.ReplicaID == "" {
		opts.ReplicaID = "r1"
	}
	ctx := context.Background()
	rt, err := durable.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	ec.SetDurableRunner(rt)
	if err := ec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Launch(ec); err != nil {
		t.Fatal(err)
	}
	a := &app{ec: ec, rt: rt}
	t.Cleanup(a.stop)
	return a
}

// threeSteps are a, b and c, counted in n.
func threeSteps(n *[3]atomic.Int32) []engine.Processor {
	return []engine.Processor{appendTo("w.yaml:3:5 a", &n[0]), appendTo("w.yaml:4:5 b", &n[1]), appendTo("w.yaml:5:5 c", &n[2])}
}

// wantCompletedOnce checks that run completed with every step's output, each
// step having run once.
func wantCompletedOnce(t *testing.T, run durable.Run, n *[3]atomic.Int32) {
	t.Helper()
	if run.State != durable.StateCompleted || run.Internal {
		t.Fatalf("run %+v", run)
	}
	s, err := exchange.DecodeSnapshot(run.Result)
	if err != nil || s.Body != "in+w.yaml:3:5 a+w.yaml:4:5 b+w.yaml:5:5 c" {
		t.Fatalf("result %s, %v", run.Result, err)
	}
	if n[0].Load() != 1 || n[1].Load() != 1 || n[2].Load() != 1 {
		t.Fatalf("steps ran %d, %d, %d times", n[0].Load(), n[1].Load(), n[2].Load())
	}
}

// noReviveLeft fails when a goroutine of the outage handling outlived its
// runtime.
func noReviveLeft(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	if strings.Contains(string(buf), "durable.(*Runtime).revive") || strings.Contains(string(buf), "durable.(*Runtime).storeRetry") {
		t.Fatalf("an outage goroutine outlived its runtime:\n%s", buf)
	}
}

var errReset = &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}

func TestTransientStoreErrors(t *testing.T) {
	t.Parallel()
	busy, constraint := sqliteErrors(t)
	for _, c := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"connection reset", fmt.Errorf("durable store: %w", errReset), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"EOF", io.ErrUnexpectedEOF, true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"serialization", &pgconn.PgError{Code: "40001"}, true},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"lock timeout", &pgconn.PgError{Code: "55P03"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"store call deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), true},
		{"unknown", errors.New("something odd"), true},
		{"sqlite busy", busy, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, false},
		{"bad password", &pgconn.PgError{Code: "28P01"}, false},
		{"sqlite constraint", constraint, false},
		{"cancelled", context.Canceled, false},
		{"run cancelled", fmt.Errorf("step: %w", dbos.ErrWorkflowCancelled), false},
		{"taken over", dbos.ErrConflictingWorkflowID, false},
		{"stopped", durable.ErrShutdown, false},
	} {
		if got := durable.TransientStoreErrorForTest(c.err); got != c.transient {
			t.Errorf("%s (%v): transient %v, want %v", c.name, c.err, got, c.transient)
		}
	}
}

// sqliteErrors are a real SQLITE_BUSY and a real SQLITE_CONSTRAINT.
func sqliteErrors(t *testing.T) (busy, constraint error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	if _, err := a.Exec(`CREATE TABLE t (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(`INSERT INTO t VALUES ('x')`); err != nil {
		t.Fatal(err)
	}
	_, constraint = a.Exec(`INSERT INTO t VALUES ('x')`)
	tx, err := a.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`INSERT INTO t VALUES ('y')`); err != nil {
		t.Fatal(err)
	}
	_, busy = b.Exec(`INSERT INTO t VALUES ('z')`)
	if busy == nil || constraint == nil {
		t.Fatalf("busy %v, constraint %v", busy, constraint)
	}
	return busy, constraint
}

func TestStoreBackoffIsBoundedAndJittered(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 40; n++ {
		ceil := min(100*time.Millisecond<<min(n-1, 10), 5*time.Second)
		seen := map[time.Duration]bool{}
		for range 20 {
			d := durable.StoreBackoffForTest(n)
			if d < ceil/2 || d > ceil {
				t.Fatalf("retry %d waits %v, want [%v, %v]", n, d, ceil/2, ceil)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Fatalf("retry %d always waits %v", n, seen)
		}
	}
}

// A checkpoint the store could not keep (a connection reset) does not fail
// the run: its segment waits and goes on from its last checkpoint, and the
// caller already awaiting it gets its result.
func TestACheckpointTheStoreCouldNotKeepIsRetried(t *testing.T) {
	t.Parallel()
	var n [3]atomic.Int32
	a := startAppWith(t, durable.Options{DataDir: t.TempDir()}, threeSteps(&n)...)
	var faults atomic.Int32
	durable.SetStoreFaultForTest(a.rt, func(_ string, step int) error {
		if step == 1 && faults.Add(1) <= 3 {
			return errReset
		}
		return nil
	})
	run := runToEnd(t, a, "r1")
	wantCompletedOnce(t, run, &n)
	if faults.Load() != 4 {
		t.Fatalf("the checkpoint was tried %d times", faults.Load())
	}
}

// A store error that means a bug (a constraint violated) fails the run at
// once, as a failure in Helix naming the store.
func TestAPermanentStoreErrorFailsTheRunAtOnce(t *testing.T) {
	t.Parallel()
	var n [3]atomic.Int32
	a := startAppWith(t, durable.Options{DataDir: t.TempDir()}, threeSteps(&n)...)
	var faults atomic.Int32
	durable.SetStoreFaultForTest(a.rt, func(_ string, step int) error {
		if step == 1 {
			faults.Add(1)
			return &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}
		}
		return nil
	})
	run := runToEnd(t, a, "r1")
	if run.State != durable.StateFailed || !run.Internal || !strings.Contains(run.Error, "durable store: ") || !strings.Contains(run.Error, "duplicate key") {
		t.Fatalf("run %+v", run)
	}
	if faults.Load() != 1 || n[1].Load() != 0 || n[2].Load() != 0 {
		t.Fatalf("checkpoint tried %d times, steps ran %d, %d, %d", faults.Load(), n[0].Load(), n[1].Load(), n[2].Load())
	}
}

// A store that keeps failing for longer than Options.StoreOutage fails the
// run, saying which store and what to do.
func TestAnOutagePastTheLimitFailsTheRun(t *testing.T) {
	t.Parallel()
	var n [3]atomic.Int32
	dir := t.TempDir()
	a := startAppWith(t, durable.Options{DataDir: dir, StoreOutage: 500 * time.Millisecond}, threeSteps(&n)...)
	var faults atomic.Int32
	durable.SetStoreFaultForTest(a.rt, func(_ string, step int) error {
		if step == 1 {
			faults.Add(1)
			return errReset
		}
		return nil
	})
	run := runToEnd(t, a, "r1")
	if run.State != durable.StateFailed || !run.Internal {
		t.Fatalf("run %+v", run)
	}
	for _, want := range []string{"durable store (SQLite " + filepath.Join(dir, "durable.db") + ") kept failing for", "connection reset", "helix runs resume"} {
		if !strings.Contains(run.Error, want) {
			t.Fatalf("error %q does not say %q", run.Error, want)
		}
	}
	if faults.Load() < 2 {
		t.Fatalf("the checkpoint was tried %d times", faults.Load())
	}
}

// Stopped while its run waits for the store, a runtime leaves the run pending
// and no goroutine behind; the next start takes the run up. (Not parallel:
// it looks at every goroutine.)
func TestStopDuringAnOutageLeavesTheRunPending(t *testing.T) {
	dir := t.TempDir()
	var n [3]atomic.Int32
	a := startAppWith(t, durable.Options{DataDir: dir}, threeSteps(&n)...)
	var faults atomic.Int32
	failedTwice := make(chan struct{})
	durable.SetStoreFaultForTest(a.rt, func(_ string, step int) error {
		if step == 2 {
			if faults.Add(1) == 2 {
				close(failedTwice) // the suspended segment was taken up again
			}
			return errReset
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failedTwice:
	case <-ctx.Done():
		t.Fatalf("the run was not taken up again after its checkpoint failed (%d tries)", faults.Load())
	}
	if run, err := a.rt.Get(ctx, "r1"); err != nil || run.State != durable.StateWorking {
		t.Fatalf("run %+v, %v", run, err)
	}
	a.stop()
	noReviveLeft(t)

	b := startAppWith(t, durable.Options{DataDir: dir}, threeSteps(&n)...)
	run, err := b.rt.Await(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	wantCompletedOnce(t, run, &n)
}

// The embedded store's write lock held by another connection for longer than
// the busy timeout: the run waits for it and completes, each step once.
func TestSQLiteLockHeldLongerThanTheBusyTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n [3]atomic.Int32
	steps := threeSteps(&n)
	released := make(chan struct{})
	var held atomic.Bool
	lock := step{name: "w.yaml:4:5 b", runs: &n[1], fn: func(ctx context.Context, ex *exchange.Exchange) error {
		// Another process's write transaction, held past the step's end.
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "durable.db")+"?_pragma=busy_timeout(5000)")
		if err != nil {
			return err
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		held.Store(true)
		go func() {
			time.Sleep(1500 * time.Millisecond)
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			db.Close()
			close(released)
		}()
		ex.In().SetBody(fmt.Sprint(ex.In().Body(), "+w.yaml:4:5 b"))
		return nil
	}}
	steps[1] = lock
	a := startAppWith(t, durable.Options{DataDir: dir, BusyTimeout: 100 * time.Millisecond}, steps...)
	run := runToEnd(t, a, "r1")
	<-released
	if !held.Load() {
		t.Fatal("the lock was never held")
	}
	wantCompletedOnce(t, run, &n)
}

// PostgreSQL stopped as by a crash while a run's last step runs, and started
// again: the run finishes, each step once, and the caller awaiting it all
// along gets its result.
func TestPostgresStoppedMidRunResumes(t *testing.T) {
	pg := testtools.StartPrivatePostgres(t)
	var n [3]atomic.Int32
	steps := threeSteps(&n)
	entered, release := make(chan struct{}), make(chan struct{})
	steps[2] = step{name: "w.yaml:5:5 c", runs: &n[2], fn: func(_ context.Context, ex *exchange.Exchange) error {
		close(entered)
		<-release
		ex.In().SetBody(fmt.Sprint(ex.In().Body(), "+w.yaml:5:5 c"))
		return nil
	}}
	a := startAppWith(t, durable.Options{DataDir: t.TempDir(), Store: pg.URL + "?connect_timeout=2"}, steps...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	pg.Kill(t)
	close(release)
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		time.Sleep(2 * time.Second)
		pg.Start(t)
	}()
	run, err := a.rt.Await(ctx, "r1")
	<-restarted
	if err != nil {
		t.Fatal(err)
	}
	wantCompletedOnce(t, run, &n)
	a.stop()
	noReviveLeft(t)
}

// The run's row locked by another session past the store's lock_timeout as
// the run ends: recording its end is retried, not lost (which would leave the
// run working for ever).
func TestPostgresLockTimeoutOnTheRunsRowIsRetried(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	db := url[strings.LastIndexByte(url, '/')+1:]
	testtools.PostgresExec(t, url, "ALTER DATABASE "+db+" SET lock_timeout = '200ms'")
	var n [3]atomic.Int32
	steps := threeSteps(&n)
	released := make(chan struct{})
	steps[2] = step{name: "w.yaml:5:5 c", runs: &n[2], fn: func(ctx context.Context, ex *exchange.Exchange) error {
		locked := make(chan error, 1)
		go func() {
			defer close(released)
			conn, err := pgxConnect(url)
			if err != nil {
				locked <- err
				return
			}
			defer conn.Close()
			tx, err := conn.Begin()
			if err == nil {
				_, err = tx.Exec(`SELECT 1 FROM helix.helix_runs WHERE run_id = 'r1' FOR UPDATE`)
			}
			locked <- err
			if err == nil {
				time.Sleep(1500 * time.Millisecond)
				_ = tx.Rollback()
			}
		}()
		if err := <-locked; err != nil {
			return err
		}
		ex.In().SetBody(fmt.Sprint(ex.In().Body(), "+w.yaml:5:5 c"))
		return nil
	}}
	a := startAppWith(t, durable.Options{DataDir: t.TempDir(), Store: url}, steps...)
	run := runToEnd(t, a, "r1")
	<-released
	wantCompletedOnce(t, run, &n)
}

// pgxConnect opens url through database/sql (pgx's stdlib driver).
func pgxConnect(url string) (*sql.DB, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, db.Ping()
}

// A run cancelled while it waits for its store stays cancelled: the store
// answering again does not take it up.
func TestARunCancelledDuringAnOutageStaysCancelled(t *testing.T) {
	t.Parallel()
	var n [3]atomic.Int32
	a := startAppWith(t, durable.Options{DataDir: t.TempDir()}, threeSteps(&n)...)
	var faults atomic.Int32
	failed := make(chan struct{})
	durable.SetStoreFaultForTest(a.rt, func(_ string, step int) error {
		if step == 1 {
			if faults.Add(1) == 1 {
				close(failed)
			}
			return errReset
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	<-failed
	if run, err := a.rt.Cancel(ctx, "r1"); err != nil || run.State != durable.StateCancelled {
		t.Fatalf("cancel: %+v, %v", run, err)
	}
	// Long enough for several resumptions, were there any (the first pause
	// is at most 100 ms, DBOS's queue is polled every second).
	time.Sleep(2500 * time.Millisecond)
	before := faults.Load()
	time.Sleep(1500 * time.Millisecond)
	run, err := a.rt.Get(ctx, "r1")
	if err != nil || run.State != durable.StateCancelled || faults.Load() != before || n[2].Load() != 0 {
		t.Fatalf("run %+v, %v; checkpoint tried %d then %d times; last step ran %d times", run, err, before, faults.Load(), n[2].Load())
	}
}
