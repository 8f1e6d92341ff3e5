package durable

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// Store outages. A durable run must not be lost to a blip of its store
// (PostgreSQL restarting, a connection reset, SQLite's write lock held by
// another connection): DBOS retries its own writes on the connection errors it
// knows, and what reaches Helix is treated here.
//
//   - Helix's own writes around a run (its row in helix_runs as it starts,
//     parks and ends) are retried in place with backoff (storeRetry): no step
//     runs again.
//   - A step whose checkpoint could not be kept cannot be retried in place
//     (DBOS numbers a segment's steps as they are called): the segment is
//     suspended instead, left pending in the store with every checkpoint it
//     recorded, and handed back to DBOS's queue once the store answers
//     (revive), to go on from its last checkpoint. The step in flight runs
//     again, as after a crash.
//
// Both give up after Options.StoreOutage: a run whose store kept failing that
// long fails, with an error naming the store and what to do. A run whose store
// does not answer at all then stays pending (nothing can be recorded): the next
// start recovers it.

// DefaultStoreOutage bounds how long a run waits for its store to answer again
// when the configuration does not (Options.StoreOutage).
const DefaultStoreOutage = 5 * time.Minute

// storeBackoff is the pause before retry n (1-based) of a store operation:
// doubling from 100 ms up to 5 s, each drawn at random from its upper half so
// that the runs an outage stopped together do not retry together.
func storeBackoff(n int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < n && d < 5*time.Second; i++ {
		d *= 2
	}
	d = min(d, 5*time.Second)
	return d/2 + rand.N(d/2+1) // #nosec G404 -- jitter, not security
}

// transientStoreError reports whether err, an error of the durable store, may
// go away by itself (a connection refused or reset, the server shutting down,
// a serialization failure or deadlock, SQLite busy or locked, a store call's
// deadline). An error that means a bug or a decision (a constraint violated,
// SQL the store refuses, a run cancelled or taken over, a workflow changed
// under its run) is not; when in doubt an error is transient, and the outage
// limit bounds the wait.
func transientStoreError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrShutdown) || ownershipLost(err) || unexpectedStep(err) {
		return false
	}
	var de *dbos.Error
	if errors.As(err, &de) {
		switch de.Code {
		case dbos.ErrorCodeDeadLetterQueue, dbos.ErrorCodeNonExistentWorkflow, dbos.ErrorCodeUnexpectedWorkflow,
			dbos.ErrorCodeWorkflowUnexpectedType, dbos.ErrorCodeWorkflowIDInUse, dbos.ErrorCodeConflictingRegistration:
			return false
		}
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && len(pg.Code) >= 2 {
		switch pg.Code[:2] {
		case "22", // data exception
			"23", // integrity constraint violation
			"25", // invalid transaction state
			"28", // invalid authorization (a password that changed)
			"3D", // no such database
			"3F", // no such schema
			"42", // syntax error or access rule violation
			"0A": // feature not supported
			return false
		}
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 1, // SQLITE_ERROR: SQL the store refuses
			3,  // SQLITE_PERM
			8,  // SQLITE_READONLY
			11, // SQLITE_CORRUPT
			18, // SQLITE_TOOBIG
			19, // SQLITE_CONSTRAINT
			20, // SQLITE_MISMATCH
			21, // SQLITE_MISUSE
			23, // SQLITE_AUTH
			25, // SQLITE_RANGE
			26: // SQLITE_NOTADB
			return false
		}
		return true
	}
	return true
}

// StoreOutageError is the failure of a run whose store kept failing for longer
// than Options.StoreOutage.
type StoreOutageError struct {
	Store string // "PostgreSQL" or "SQLite <path>"
	For   time.Duration
	What  string
	Err   error
}

func (e *StoreOutageError) Error() string {
	return fmt.Sprintf("durable store (%s) kept failing for %s while %s: %v; the run's checkpoints are kept: once the store answers, resume the run (helix runs resume)",
		e.Store, e.For.Round(time.Second), e.What, e.Err)
}

func (e *StoreOutageError) Unwrap() error { return e.Err }

// storeName names the store in errors and logs, without its URL (which may
// hold a password).
func (rt *Runtime) storeName() string {
	if rt.pg {
		return "PostgreSQL"
	}
	return "SQLite " + EmbeddedStorePath(rt.opts.DataDir)
}

// storeRetry runs op until it succeeds or fails for good: a permanent error is
// returned at once, a transient one is retried with backoff until
// Options.StoreOutage has passed (then a *StoreOutageError), ctx ends (its
// error, wrapping the store's) or the runtime stops (ErrShutdown).
func (rt *Runtime) storeRetry(ctx context.Context, what string, op func() error) error {
	var began time.Time
	for n := 1; ; n++ {
		err := op()
		if err == nil || !transientStoreError(err) {
			return err
		}
		if began.IsZero() {
			began = time.Now()
			rt.logger.Warn("durable: the store does not answer; retrying", "store", rt.storeName(), "while", what, "error", err)
		}
		if since := time.Since(began); since >= rt.opts.StoreOutage {
			return &StoreOutageError{Store: rt.storeName(), For: since, What: what, Err: err}
		}
		t := time.NewTimer(storeBackoff(n))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			select {
			case <-rt.closed: // stopping cancels the runs' contexts
				return ErrShutdown
			default:
			}
			return fmt.Errorf("%w (the store did not answer: %v)", ctx.Err(), err)
		case <-rt.closed:
			t.Stop()
			return ErrShutdown
		}
	}
}

// suspendedError ends a segment's execution without recording an outcome: DBOS
// leaves the segment pending, with its checkpoints, for revive (or the next
// start) to execute again.
type suspendedError struct{ cause error }

func (e *suspendedError) Error() string {
	return "durable: suspended until the store answers: " + e.cause.Error()
}

// Unwrap matches dbos.ErrWorkflowSuspended, which tells DBOS to record nothing.
func (e *suspendedError) Unwrap() []error {
	return []error{dbos.ErrWorkflowSuspended, e.cause}
}

// outage is the store outage a segment is in: since its first failure, how
// many times it was suspended.
type outage struct {
	since    time.Time
	attempts int
}

// outages are the segments of this process in a store outage, by DBOS workflow
// id; a segment leaves it when it records a checkpoint again.
type outages struct {
	mu      sync.Mutex
	m       map[string]*outage
	stopped bool           // Shutdown: no revive starts
	wg      sync.WaitGroup // the revive goroutines
}

// spawn runs f on a goroutine of its own unless stop was called.
func (o *outages) spawn(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		f()
	}()
}

// stop waits for the goroutines spawn started; it starts no more.
func (o *outages) stop() {
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
	o.wg.Wait()
}

// in reports whether segment wfID is in an outage.
func (o *outages) in(wfID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[wfID] != nil
}

// end forgets segment wfID's outage.
func (o *outages) end(wfID string) {
	o.mu.Lock()
	delete(o.m, wfID)
	o.mu.Unlock()
}

// note counts one more failure of segment wfID and returns its outage.
func (o *outages) note(wfID string) outage {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]*outage{}
	}
	c := o.m[wfID]
	if c == nil {
		c = &outage{since: time.Now()}
		o.m[wfID] = c
	}
	c.attempts++
	return *c
}

// suspend leaves segment wfID pending after the transient store error cause
// and has it resumed once the store answers. It returns the error the
// segment's execution must end with (a *suspendedError); or, when the outage
// has lasted past Options.StoreOutage, a *StoreOutageError, the failure the
// run ends with instead.
func (rt *Runtime) suspend(wfID string, cause error) error {
	o := rt.outages.note(wfID)
	if since := time.Since(o.since); since >= rt.opts.StoreOutage {
		rt.outages.end(wfID)
		return &StoreOutageError{Store: rt.storeName(), For: since, What: "recording run " + wfID, Err: cause}
	}
	if o.attempts == 1 {
		rt.logger.Warn("durable: a checkpoint could not be kept; the run waits for the store and goes on from its last checkpoint",
			"run", wfID, "store", rt.storeName(), "error", cause)
	}
	// Once stopping, none: the next start recovers the pending segment.
	rt.outages.spawn(func() { rt.revive(wfID, o) })
	return &suspendedError{cause: cause}
}

// leavePending is the error a segment's execution ends with when a write of
// its own failed: the runtime stopping during a store outage leaves the
// segment pending for the next start, other errors end it.
func leavePending(err error) error {
	if errors.Is(err, ErrShutdown) {
		return &suspendedError{cause: err}
	}
	return err
}

// revive hands suspended segment wfID back to DBOS's queue once the store
// answers, after a pause that grows with the segment's suspensions. It gives
// up at Shutdown (the next start recovers the segment) and when the store has
// not answered for Options.StoreOutage (logged: the segment stays pending).
func (rt *Runtime) revive(wfID string, o outage) {
	// DBOS retries a store that does not answer until its context ends: this
	// one ends at Shutdown, which waits for revive.
	dctx, cancel := dbos.WithCancel(rt.dctx)
	defer cancel()
	stop := context.AfterFunc(rt.stopping, cancel)
	defer stop()
	for n := o.attempts; ; n++ {
		t := time.NewTimer(storeBackoff(n))
		select {
		case <-rt.closed:
			t.Stop()
			return
		case <-t.C:
		}
		err := rt.resumeSuspended(dctx, wfID)
		if err == nil {
			return
		}
		select {
		case <-rt.closed:
			return
		default:
		}
		if !transientStoreError(err) || time.Since(o.since) >= rt.opts.StoreOutage {
			rt.outages.end(wfID)
			rt.logger.Error("durable: the store did not take the run back; it stays pending until the next start or helix runs resume",
				"run", wfID, "store", rt.storeName(), "error", redactURL(err.Error(), rt.opts.Store))
			return
		}
	}
}

// resumeSuspended hands suspended segment wfID back to DBOS's queue, unless it
// is no longer pending: a run cancelled while it waited for the store stays
// cancelled (DBOS would resume a cancelled workflow too).
func (rt *Runtime) resumeSuspended(dctx dbos.Context, wfID string) error {
	ws, err := dbos.ListWorkflows(dctx, dbos.WithFilterWorkflowIDs(wfID), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return err
	}
	if len(ws) != 1 || ws[0].Status != dbos.WorkflowStatusPending {
		rt.outages.end(wfID)
		return nil
	}
	_, err = dbos.ResumeWorkflow[RunOutput](dctx, wfID)
	return err
}
