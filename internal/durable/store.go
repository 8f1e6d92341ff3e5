package durable

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/google/uuid"

	"github.com/arvenza/helix/internal/tracing"
	"github.com/arvenza/helix/pkg/exchange"
)

// The store of runs: DBOS's tables hold the checkpoints; helix_runs, in the
// same database, holds what Helix shows of a run (its state, its wait, its
// result). It is written on a run's transitions only (it starts, parks, goes
// on, ends), never per step.

var _ Runs = (*Runtime)(nil)

// table is helix_runs' qualified name.
func (rt *Runtime) table() string {
	if rt.pg {
		return "helix.helix_runs"
	}
	return "helix_runs"
}

// q rewrites a query's ? placeholders for PostgreSQL ($1, $2 …).
func (rt *Runtime) q(query string) string {
	query = strings.ReplaceAll(query, "helix_runs", rt.table())
	if !rt.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (rt *Runtime) createTables(ctx context.Context) error {
	var stmts []string
	if rt.pg {
		stmts = append(stmts, `CREATE SCHEMA IF NOT EXISTS helix`)
	}
	stmts = append(stmts, rt.q(`CREATE TABLE IF NOT EXISTS helix_runs (
		run_id TEXT PRIMARY KEY,
		workflow TEXT NOT NULL,
		kind TEXT NOT NULL DEFAULT '',
		segment INTEGER NOT NULL DEFAULT 0,
		state TEXT NOT NULL,
		step INTEGER NOT NULL DEFAULT 0,
		step_name TEXT NOT NULL DEFAULT '',
		wait TEXT,
		snapshot TEXT,
		resolution TEXT,
		principal TEXT NOT NULL DEFAULT '',
		ttl_ms BIGINT NOT NULL DEFAULT 0,
		created_at BIGINT NOT NULL,
		updated_at BIGINT NOT NULL,
		result TEXT,
		error TEXT NOT NULL DEFAULT '',
		internal_failure INTEGER NOT NULL DEFAULT 0
	)`), rt.q(`CREATE INDEX IF NOT EXISTS helix_runs_state ON helix_runs (state)`))
	if rt.pg {
		// The index name must not be qualified in PostgreSQL.
		stmts[len(stmts)-1] = `CREATE INDEX IF NOT EXISTS helix_runs_state ON helix.helix_runs (state)`
	}
	for _, s := range stmts {
		if _, err := rt.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("durable store: creating helix_runs: %w", err)
		}
	}
	return rt.addInternalColumn(ctx)
}

// addInternalColumn adds internal_failure (Run.Internal) to a helix_runs
// created before it had one.
func (rt *Runtime) addInternalColumn(ctx context.Context) error {
	if _, err := rt.db.ExecContext(ctx, rt.q(`SELECT internal_failure FROM helix_runs WHERE 1 = 0`)); err == nil {
		return nil
	}
	if _, err := rt.db.ExecContext(ctx, rt.q(`ALTER TABLE helix_runs ADD COLUMN internal_failure INTEGER NOT NULL DEFAULT 0`)); err != nil {
		return fmt.Errorf("durable store: adding internal_failure to helix_runs: %w", err)
	}
	return nil
}

func now() int64 { return time.Now().UnixMilli() }

// insertRun records a run as it starts (its first segment's first execution;
// a recovery finds it there).
func (rt *Runtime) insertRun(ctx context.Context, runID string, in RunInput, kind string) (inserted bool, err error) {
	t := now()
	var res sql.Result
	err = rt.storeRetry(ctx, "recording run "+runID, func() (err error) {
		res, err = rt.db.ExecContext(context.WithoutCancel(ctx), rt.q(`INSERT INTO helix_runs
		(run_id, workflow, kind, segment, state, principal, ttl_ms, created_at, updated_at)
		VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`),
			runID, in.Workflow, kind, string(StateWorking), in.Principal, in.TTLMillis, t, t)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("durable store: recording run %s: %w", runID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// endRun records that segment seg of the run ended the run.
func (rt *Runtime) endRun(ctx context.Context, runID string, seg int, state State, step int, result json.RawMessage, msg string, internal bool) error {
	err := rt.storeRetry(ctx, "recording the end of run "+runID, func() error {
		_, err := rt.db.ExecContext(context.WithoutCancel(ctx), rt.q(`UPDATE helix_runs SET state = ?, step = ?, result = ?, error = ?, internal_failure = ?,
		wait = NULL, snapshot = NULL, updated_at = ? WHERE run_id = ? AND segment = ? AND state = ?`),
			string(state), step, nullString(result), msg, boolInt(internal), now(), runID, seg, string(StateWorking))
		return err
	})
	if err != nil {
		return fmt.Errorf("durable store: recording the end of run %s: %w", runID, err)
	}
	return nil
}

// parkInStore records that segment seg parked the run at step.
func (rt *Runtime) parkInStore(ctx context.Context, runID string, seg int, state State, step int, name string, w storedWait, snap json.RawMessage) error {
	wait, err := json.Marshal(w)
	if err != nil {
		return err
	}
	err = rt.storeRetry(ctx, "parking run "+runID, func() error {
		_, err := rt.db.ExecContext(context.WithoutCancel(ctx), rt.q(`UPDATE helix_runs SET state = ?, step = ?, step_name = ?, wait = ?, snapshot = ?,
		updated_at = ? WHERE run_id = ? AND segment = ? AND state = ?`),
			string(state), step, name, string(wait), string(snap), now(), runID, seg, string(StateWorking))
		return err
	})
	if err != nil {
		return fmt.Errorf("durable store: parking run %s: %w", runID, err)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullString(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// wake wakes this process's Await calls on the run.
func (rt *Runtime) wake(runID string) {
	rt.mu.Lock()
	ws := rt.waiters[runID]
	delete(rt.waiters, runID)
	rt.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// Start starts workflow on ex as a durable run.
func (rt *Runtime) Start(ctx context.Context, workflow string, ex *exchange.Exchange, opts StartOptions) (Run, error) {
	ec, err := rt.launchedEngine(ctx)
	if err != nil {
		return Run{}, err
	}
	if _, ok := ec.Workflow(workflow); !ok {
		return Run{}, fmt.Errorf("durable: no workflow with id %q", workflow)
	}
	snap, err := checkpointOf(ex).Encode(rt.opts.MaxCheckpoint)
	if err != nil {
		var big *exchange.SnapshotTooLargeError
		if errors.As(err, &big) {
			return Run{}, &inputError{status: 413, msg: fmt.Sprintf("the input of durable workflow %q is %s, over helix.durable_max_checkpoint %s", workflow,
				exchange.FormatBytes(big.Size), exchange.FormatBytes(big.Limit))}
		}
		return Run{}, &inputError{status: 422, msg: fmt.Sprintf("the input of durable workflow %q cannot be checkpointed: %v", workflow, err)}
	}
	id := opts.RunID
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return Run{}, err
		}
		id = u.String()
	} else if strings.Contains(id, "~") {
		return Run{}, fmt.Errorf("durable: run id %q has a ~, which marks a run's segments", id)
	}
	in := RunInput{Workflow: workflow, Snapshot: snap, Principal: opts.Principal, TTLMillis: opts.TTL.Milliseconds(),
		Trace: tracing.SpanRef(ctx), Answers: opts.Answers}
	// A second start with the same id gets the first run (DBOS: ReturnExisting).
	if _, err := dbos.RunWorkflow(rt.dctx, rt.interpreter, in, dbos.WithWorkflowID(id)); err != nil {
		return Run{}, fmt.Errorf("durable: starting run %s: %s", id, redactURL(err.Error(), rt.opts.Store))
	}
	run, err := rt.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || transientStoreError(err) {
		// Started, not yet recorded by its first execution (or the store
		// does not answer now: the run waits for it, Await too).
		t := time.Now()
		return Run{ID: id, Workflow: workflow, State: StateWorking, Principal: opts.Principal, TTL: opts.TTL, CreatedAt: t, UpdatedAt: t, Attempts: 1}, nil
	}
	return run, err
}

// Await waits until the run ends or parks, or ctx ends.
func (rt *Runtime) Await(ctx context.Context, runID string) (Run, error) {
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	var storeErr error // the last read failed so
	for {
		woken := make(chan struct{})
		rt.mu.Lock()
		rt.waiters[runID] = append(rt.waiters[runID], woken)
		rt.mu.Unlock()
		run, err := rt.Get(ctx, runID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			if !transientStoreError(err) || ctx.Err() != nil {
				return run, err
			}
			// The store does not answer: the run waits for it (outage.go),
			// and so does its caller, up to its own deadline.
			storeErr = err
		} else {
			storeErr = nil
		}
		if err == nil && (run.State != StateWorking) {
			return run, nil
		}
		// Other replicas' runs are polled; this process's wake it.
		select {
		case <-ctx.Done():
			if storeErr != nil {
				return run, fmt.Errorf("%w (the durable store does not answer: %v)", ctx.Err(), storeErr)
			}
			return run, ctx.Err()
		case <-rt.closed:
			return run, ErrShutdown
		case <-woken:
		case <-poll.C:
		}
	}
}

const runColumns = `run_id, workflow, kind, segment, state, step, wait, principal, ttl_ms, created_at, updated_at, result, error, internal_failure`

func scanRun(row interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var state string
	var wait, result sql.NullString
	var ttl, created, updated, internal int64
	if err := row.Scan(&r.ID, &r.Workflow, &r.Kind, &r.Segment, &state, &r.Step, &wait, &r.Principal, &ttl, &created, &updated, &result, &r.Error, &internal); err != nil {
		return Run{}, err
	}
	r.Internal = internal != 0
	r.State = State(state)
	r.TTL = time.Duration(ttl) * time.Millisecond
	r.CreatedAt, r.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	if wait.Valid {
		if sw, err := decodeStoredWait(wait.String); err == nil {
			w := sw.Wait
			r.Wait = &w
			if sw.multi() && !r.State.Terminal() {
				r.Waits = sw.pending()
			}
		}
	}
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	return r, nil
}

// Get returns the run.
func (rt *Runtime) Get(ctx context.Context, runID string) (Run, error) {
	r, err := scanRun(rt.db.QueryRowContext(ctx, rt.q(`SELECT `+runColumns+` FROM helix_runs WHERE run_id = ?`), runID))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, ErrNotFound
	}
	if err != nil {
		return Run{}, fmt.Errorf("durable store: %w", err)
	}
	if r.State == StateWorking {
		// Executions of the current segment: 1, plus one per recovery. Only
		// while it works: Await reads every run it waits for here, and an
		// ended run's reply need not wait for one more query.
		// DBOS retries a store that does not answer until its context ends:
		// the caller's, not the runtime's.
		lctx, cancel := dbos.WithCancel(rt.dctx)
		stop := context.AfterFunc(ctx, cancel)
		if ws, err := dbos.ListWorkflows(lctx, dbos.WithFilterWorkflowIDs(segmentID(runID, r.Segment)), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false)); err == nil && len(ws) == 1 {
			r.Attempts = ws[0].Attempts
		}
		stop()
		cancel()
	}
	return r, nil
}

// List returns the runs f selects, by id.
func (rt *Runtime) List(ctx context.Context, f Filter) ([]Run, error) {
	var where []string
	var args []any
	if f.Workflow != "" {
		where, args = append(where, "workflow = ?"), append(args, f.Workflow)
	}
	if f.Principal != "" {
		where, args = append(where, "principal = ?"), append(args, f.Principal)
	}
	if len(f.States) > 0 {
		marks := make([]string, len(f.States))
		for i, s := range f.States {
			marks[i] = "?"
			args = append(args, string(s))
		}
		where = append(where, "state IN ("+strings.Join(marks, ", ")+")")
	}
	if f.After != "" {
		where, args = append(where, "run_id > ?"), append(args, f.After)
	}
	query := `SELECT ` + runColumns + ` FROM helix_runs`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY run_id"
	if f.Limit > 0 {
		query += " LIMIT " + strconv.Itoa(f.Limit)
	}
	rows, err := rt.db.QueryContext(ctx, rt.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("durable store: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("durable store: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Steps returns the run's checkpointed steps, segment by segment.
func (rt *Runtime) Steps(ctx context.Context, runID string) ([]StepRecord, error) {
	run, err := rt.Get(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []StepRecord
	for k := 0; k <= run.Segment; k++ {
		steps, err := dbos.GetWorkflowSteps(rt.dctx, segmentID(runID, k), dbos.WithStepsLoadOutput(true))
		if err != nil {
			return nil, fmt.Errorf("durable store: steps of run %s: %w", runID, err)
		}
		for _, s := range steps {
			rec := StepRecord{Segment: k, Index: -1, Name: s.StepName, At: s.CompletedAt}
			if i, name, ok := strings.Cut(s.StepName, " "); ok {
				if n, err := strconv.Atoi(i); err == nil {
					rec.Index, rec.Name = n, name
				}
			}
			if out, ok := s.Output.(string); ok {
				rec.Bytes = len(out)
			} else if raw, err := json.Marshal(s.Output); err == nil && s.Output != nil {
				rec.Bytes = len(raw)
			}
			if s.Error != nil {
				rec.Error = s.Error.Error()
			}
			out = append(out, rec)
		}
	}
	return out, nil
}

// Cancel cancels a run that has not ended.
func (rt *Runtime) Cancel(ctx context.Context, runID string) (Run, error) {
	run, err := rt.Get(ctx, runID)
	if err != nil || run.State.Terminal() {
		return run, err
	}
	if err := dbos.CancelWorkflow(rt.dctx, segmentID(runID, run.Segment)); err != nil {
		return run, fmt.Errorf("durable: cancelling run %s: %w", runID, err)
	}
	if _, err := rt.db.ExecContext(ctx, rt.q(`UPDATE helix_runs SET state = ?, wait = NULL, updated_at = ? WHERE run_id = ? AND state NOT IN (?, ?, ?)`),
		string(StateCancelled), now(), runID, string(StateCompleted), string(StateFailed), string(StateCancelled)); err != nil {
		return run, fmt.Errorf("durable store: %w", err)
	}
	rt.wake(runID)
	return rt.Get(ctx, runID)
}

// Resolve ends the wait of a parked run: the first resolution wins.
func (rt *Runtime) Resolve(ctx context.Context, runID string, res Resolution) (Run, error) {
	return rt.resolveAt(ctx, runID, -1, res)
}

// resolveAt is Resolve of the wait of segment want only (-1: any segment);
// see ResolveSegment (wait_store.go).
func (rt *Runtime) resolveAt(ctx context.Context, runID string, want int, res Resolution) (Run, error) {
	// A run waiting for several things at once records each answer; a lost
	// race with another answer (the wait column changed under it) reads again.
	// Each loss is another answer's win, so this ends within as many tries as
	// the run has waits; the bound is a guard only.
	for attempt := 0; ; attempt++ {
		run, again, err := rt.resolveOnce(ctx, runID, want, res)
		if !again || attempt >= 10000 {
			return run, err
		}
	}
}

// resolveOnce is one try of resolveAt; again: another resolution of the same
// run changed its waits meanwhile, try again.
func (rt *Runtime) resolveOnce(ctx context.Context, runID string, want int, res Resolution) (_ Run, again bool, _ error) {
	var state, name string
	var seg, step int
	var snap, wait sql.NullString
	err := rt.db.QueryRowContext(ctx, rt.q(`SELECT state, segment, step, step_name, snapshot, wait FROM helix_runs WHERE run_id = ?`), runID).
		Scan(&state, &seg, &step, &name, &snap, &wait)
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, false, ErrNotFound
	}
	if err != nil {
		return Run{}, false, fmt.Errorf("durable store: %w", err)
	}
	if State(state) != StateInputRequired && State(state) != StateWaiting || want >= 0 && seg != want {
		return Run{}, false, ErrNotWaiting
	}
	sw, err := decodeStoredWait(wait.String)
	if !wait.Valid || err != nil {
		return Run{}, false, errNoWait
	}
	var answers map[string]Resolution
	newWait := wait.String
	if sw.multi() {
		next, r, all, err := sw.answer(res)
		if err != nil {
			return Run{}, false, err
		}
		res = r
		b, err := json.Marshal(next)
		if err != nil {
			return Run{}, false, err
		}
		newWait = string(b)
		if !all {
			// Recorded; the run stays parked for the waits left. Compared
			// with the wait column read: of two answers at once, one
			// writes, the other reads again.
			done, err := rt.db.ExecContext(ctx, rt.q(`UPDATE helix_runs SET wait = ?, updated_at = ?
				WHERE run_id = ? AND segment = ? AND state IN (?, ?) AND wait = ?`),
				newWait, now(), runID, seg, string(StateInputRequired), string(StateWaiting), wait.String)
			if err != nil {
				return Run{}, false, fmt.Errorf("durable store: %w", err)
			}
			if n, _ := done.RowsAffected(); n != 1 {
				return Run{}, true, ErrNotWaiting
			}
			run, err := rt.Get(ctx, runID)
			return run, false, err
		}
		answers = next.Answers
	} else if res.Key != "" && sw.Key != "" && res.Key != sw.Key {
		return Run{}, false, fmt.Errorf("%w: it waits for %s %q, not %q", ErrNotWaiting, sw.Kind, sw.Key, res.Key)
	}
	resJSON, err := json.Marshal(res)
	if err != nil {
		return Run{}, false, err
	}
	// The claim: of two resolutions, one moves the run to its next segment.
	claimed, err := rt.db.ExecContext(ctx, rt.q(`UPDATE helix_runs SET state = ?, segment = ?, resolution = ?, wait = ?, updated_at = ?
		WHERE run_id = ? AND segment = ? AND state IN (?, ?) AND wait = ?`),
		string(StateWorking), seg+1, string(resJSON), newWait, now(), runID, seg, string(StateInputRequired), string(StateWaiting), wait.String)
	if err != nil {
		return Run{}, false, fmt.Errorf("durable store: %w", err)
	}
	if n, _ := claimed.RowsAffected(); n != 1 {
		// Another resolution came first: for a set, it may have answered
		// another wait only (read again); for one wait, it won.
		return Run{}, sw.multi(), ErrNotWaiting
	}
	wf, err := rt.workflowOf(ctx, runID)
	if err != nil {
		return Run{}, false, err
	}
	if err := rt.continueRun(runID, seg+1, RunInput{Workflow: wf, StartStep: step, StartName: name, Snapshot: json.RawMessage(snap.String), Resolution: &res, Answers: answers}); err != nil {
		return Run{}, false, err
	}
	run, err := rt.Get(ctx, runID)
	return run, false, err
}

func (rt *Runtime) workflowOf(ctx context.Context, runID string) (string, error) {
	var wf string
	if err := rt.db.QueryRowContext(ctx, rt.q(`SELECT workflow FROM helix_runs WHERE run_id = ?`), runID).Scan(&wf); err != nil {
		return "", fmt.Errorf("durable store: %w", err)
	}
	return wf, nil
}

// continueRun starts segment seg of the run (a no-op when it exists).
func (rt *Runtime) continueRun(runID string, seg int, in RunInput) error {
	if !rt.isLaunched() {
		return rt.enqueueContinuation(runID, seg, in) // operate.go: helix runs
	}
	if _, err := dbos.RunWorkflow(rt.dctx, rt.interpreter, in, dbos.WithWorkflowID(segmentID(runID, seg))); err != nil {
		return fmt.Errorf("durable: continuing run %s: %s", runID, redactURL(err.Error(), rt.opts.Store))
	}
	return nil
}

// repairContinuations starts the segments whose resolution was claimed but
// which a crash kept from starting (claimed, then killed before RunWorkflow).
func (rt *Runtime) repairContinuations(ctx context.Context) error {
	rows, err := rt.db.QueryContext(ctx, rt.q(`SELECT run_id, workflow, segment, step, step_name, snapshot, resolution, wait FROM helix_runs
		WHERE state = ? AND segment > 0 AND resolution IS NOT NULL`), string(StateWorking))
	if err != nil {
		return fmt.Errorf("durable store: %w", err)
	}
	type pending struct {
		id  string
		seg int
		in  RunInput
	}
	var todo []pending
	for rows.Next() {
		var p pending
		var snap, res, wait sql.NullString
		if err := rows.Scan(&p.id, &p.in.Workflow, &p.seg, &p.in.StartStep, &p.in.StartName, &snap, &res, &wait); err != nil {
			rows.Close()
			return fmt.Errorf("durable store: %w", err)
		}
		p.in.Snapshot = json.RawMessage(snap.String)
		var r Resolution
		if json.Unmarshal([]byte(res.String), &r) == nil {
			p.in.Resolution = &r
		}
		if sw, err := decodeStoredWait(wait.String); wait.Valid && err == nil && sw.multi() {
			p.in.Answers = sw.Answers
		}
		todo = append(todo, p)
	}
	rows.Close()
	for _, p := range todo {
		if ws, err := dbos.ListWorkflows(rt.dctx, dbos.WithFilterWorkflowIDs(segmentID(p.id, p.seg)), dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false)); err == nil && len(ws) == 1 {
			continue
		}
		if err := rt.continueRun(p.id, p.seg, p.in); err != nil {
			return err
		}
	}
	return nil
}

// Resume runs a failed or stuck run again from its last checkpoint: a new
// segment that keeps the checkpoints of the current one up to the step that
// failed, which runs again.
func (rt *Runtime) Resume(ctx context.Context, runID string) (Run, error) {
	run, err := rt.Get(ctx, runID)
	if err != nil {
		return run, err
	}
	switch run.State {
	case StateCompleted, StateInputRequired, StateWaiting:
		return run, fmt.Errorf("durable: run %s is %s; only a failed, cancelled or stuck run resumes", runID, run.State)
	}
	steps, err := dbos.GetWorkflowSteps(rt.dctx, segmentID(runID, run.Segment))
	if err != nil {
		return run, fmt.Errorf("durable: run %s: %w", runID, err)
	}
	// Keep every checkpoint before the one that failed the run.
	keep := len(steps)
	for i, s := range steps {
		if strings.Contains(fmt.Sprint(s.Output), `"f":true`) || s.Error != nil {
			keep = i
			break
		}
	}
	next := run.Segment + 1
	if _, err := dbos.ForkWorkflow[RunOutput](rt.dctx, dbos.ForkWorkflowInput{
		OriginalWorkflowID: segmentID(runID, run.Segment), ForkedWorkflowID: segmentID(runID, next), StartStep: uint(keep),
	}); err != nil {
		return run, fmt.Errorf("durable: resuming run %s: %w", runID, err)
	}
	if _, err := rt.db.ExecContext(ctx, rt.q(`UPDATE helix_runs SET state = ?, segment = ?, error = '', internal_failure = 0, result = NULL, updated_at = ? WHERE run_id = ? AND segment = ?`),
		string(StateWorking), next, now(), runID, run.Segment); err != nil {
		return run, fmt.Errorf("durable store: %w", err)
	}
	return rt.Get(ctx, runID)
}

// inputError is an input a durable run cannot start with: the caller's fault
// (413 too large, 422 not data a checkpoint keeps).
type inputError struct {
	status int
	msg    string
}

func (e *inputError) Error() string   { return e.msg }
func (e *inputError) HTTPStatus() int { return e.status }
