package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// The interpreter: the one DBOS workflow function every durable run executes.
// It runs the Helix workflow through the engine with a StepRunner whose RunTop
// is a DBOS step returning the exchange's snapshot after the step: the first
// execution runs each step and records its snapshot; a recovery after a crash
// gets the recorded snapshots back for the steps that finished (they do not
// run again) and runs the rest.
//
// A run is made of segments, one DBOS workflow each: segment 0 has the run's
// id, segment k the id <run id>~k. A run parks (a waiting step returns a
// *ParkError) by ending its segment; Resolve starts the next one at the step
// that parked, with the exchange it had before that step.

// RunInput is what a segment starts from.
type RunInput struct {
	Workflow string `json:"workflow"`
	// StartStep is the top-level step the segment starts at (0 for the first
	// segment), StartName its name then: a different name now means the
	// workflow changed under the pending run.
	StartStep int    `json:"start_step,omitempty"`
	StartName string `json:"start_name,omitempty"`
	// Snapshot is the exchange the segment starts with.
	Snapshot   json.RawMessage `json:"snapshot"`
	Resolution *Resolution     `json:"resolution,omitempty"`
	// Answers are the resolutions by wait key when the segment before parked
	// on several waits at once (Resolution is then the last of them).
	Answers   map[string]Resolution `json:"answers,omitempty"`
	Principal string                `json:"principal,omitempty"`
	TTLMillis int64                 `json:"ttl_ms,omitempty"`
	// Trace is the W3C traceparent of the span that started the run: its
	// first execution continues that trace, later ones link to it.
	Trace string `json:"trace,omitempty"`
}

// RunOutput is how a segment ended.
type RunOutput struct {
	State State `json:"state"`
	Step  int   `json:"step"`
}

// stepResult is one top-level step's checkpoint: the exchange after it (the
// run goes on), or the run's end at that step.
type stepResult struct {
	// Snapshot is the exchange after the step; when Failed, with the failure.
	Snapshot json.RawMessage `json:"s,omitempty"`
	// Failed: the step failed the run (its error handler did not recover).
	Failed bool   `json:"f,omitempty"`
	Error  string `json:"e,omitempty"`
	// Internal: it failed in Helix, not in the step's work (its checkpoint
	// could not be kept, the step panicked); see Run.Internal.
	Internal bool `json:"i,omitempty"`
	// Park: the step parked the run on this wait; Parks lists every wait
	// when it parked on several at once (parallel branches).
	Park  *Wait  `json:"park,omitempty"`
	Parks []Wait `json:"parks,omitempty"`
}

// segmentID is the DBOS workflow id of segment k of run.
func segmentID(run string, k int) string {
	if k == 0 {
		return run
	}
	return run + "~" + strconv.Itoa(k)
}

// splitSegment is the run id and segment of a DBOS workflow id.
func splitSegment(id string) (string, int) {
	if i := strings.LastIndexByte(id, '~'); i >= 0 {
		if k, err := strconv.Atoi(id[i+1:]); err == nil && k > 0 {
			return id[:i], k
		}
	}
	return id, 0
}

// ChangedError is the failure of a run whose workflow changed under it: the
// step it had reached is no longer the same step.
type ChangedError struct {
	Step     int
	Was, Now string
}

func (e *ChangedError) Error() string {
	now := e.Now
	if now == "" {
		now = "no step"
	}
	return fmt.Sprintf("workflow changed under a pending run: its step %d was %q, it is now %s; finish or cancel pending runs before changing a durable workflow, or resume the run from its start",
		e.Step, e.Was, quoteOr(now))
}

func quoteOr(s string) string {
	if s == "no step" {
		return s
	}
	return strconv.Quote(s)
}

// interpret runs one segment of a run (the registered DBOS workflow).
func (rt *Runtime) interpret(dctx dbos.Context, in RunInput) (RunOutput, error) {
	wfID, err := dbos.GetWorkflowID(dctx)
	if err != nil {
		return RunOutput{}, err
	}
	runID, seg := splitSegment(wfID)
	ec := rt.engine()
	if ec == nil {
		return RunOutput{}, errors.New("durable: the runtime is not launched")
	}
	w, ok := ec.Workflow(in.Workflow)
	if !ok {
		return rt.finish(dctx, runID, seg, in, nil, fmt.Errorf("workflow %q is no longer in the configuration", in.Workflow), 0, true)
	}
	first := false // the first execution of the run (operate.go: traceContext)
	if seg == 0 {
		if first, err = rt.insertRun(dctx, runID, in, string(w.Kind)); err != nil {
			return RunOutput{}, leavePending(err)
		}
	}
	snap, err := exchange.DecodeSnapshot(in.Snapshot)
	if err != nil {
		return rt.finish(dctx, runID, seg, in, nil, fmt.Errorf("the run's input cannot be read: %w", err), in.StartStep, true)
	}
	ex := exchange.NewFromSnapshot(snap)
	ex.In().SetHeader(HeaderRunID, runID) // ${header.HelixRunId} in the steps
	r := &stepRunner{rt: rt, dctx: dctx, run: runID, segment: seg, in: in, last: in.Snapshot, journaled: journaledSteps(w),
		clock: runClock{began: time.Now()}, outage: rt.outages.in(wfID)}
	ctx := engine.WithStepRunner(context.Context(dctx), r)
	ctx = WithDurable(ctx, runID)
	ctx = traceContext(ctx, in.Trace, first)
	// Run, not RunUntilStop: only the runtime's stop (which leaves the run
	// pending, its step unrecorded) cuts a run off, never the engine's drain.
	runErr := ec.Run(ctx, in.Workflow, ex)
	if r.fatal != nil {
		if ownershipLost(r.fatal) || dctx.Err() != nil {
			// Cancelled, shut down or taken over: nothing to record here.
			return RunOutput{}, r.fatal
		}
		runErr = fmt.Errorf("durable store: %w", r.fatal)
		if transientStoreError(r.fatal) {
			// A blip must not fail the run: it waits, pending, for the store.
			err := rt.suspend(wfID, r.fatal)
			gaveUp, ok := err.(*StoreOutageError)
			if !ok {
				return RunOutput{}, err
			}
			runErr = gaveUp
		}
		ex = nil
		r.internal = true
	}
	if r.outage {
		rt.outages.end(wfID)
	}
	if r.park != nil {
		return rt.parkRun(dctx, runID, seg, r)
	}
	return rt.finish(dctx, runID, seg, in, ex, runErr, r.at, r.internal || engine.IsPanic(runErr))
}

// journaledSteps are the names of w's top-level steps that checkpoint their own
// parts through a Journal ([Journaled]).
func journaledSteps(w *engine.Workflow) map[string]bool {
	var out map[string]bool
	for _, p := range w.Processors {
		if j, ok := p.(Journaled); ok && j.Journaled() {
			if out == nil {
				out = map[string]bool{}
			}
			out[stableName(engine.StepName(p))] = true
		}
	}
	return out
}

// Journaled is implemented by steps that checkpoint their own parts through
// the [Journal] in their context (an agent: each model turn, each tool result).
// Such a step is not one checkpoint: each of its journal entries is, and so is
// the exchange it ends with.
type Journaled interface {
	Journaled() bool
}

// stepRunner is the engine.StepRunner of one segment.
type stepRunner struct {
	rt        *Runtime
	dctx      dbos.Context
	run       string
	segment   int
	in        RunInput
	journaled map[string]bool
	// recorded are the names of the steps the segment recorded, read when a
	// journaled step is reached (recordedJournal); nil until then.
	recorded []string

	// last is the snapshot of the exchange before the step now running.
	last json.RawMessage
	// at is the index of the step now running.
	at int
	// park is set when a step parked the run: the exchange before it is
	// parkSnap.
	park     *Wait
	parks    []Wait // every wait when more than one
	parkName string
	parkSnap json.RawMessage
	fatal    error
	// outage: the segment was suspended by a store outage and has not
	// recorded a checkpoint since (outage.go).
	outage bool
	// internal is set when the run ends failing in Helix itself (Run.Internal).
	internal bool
	// clock times checkpoints and resumptions for /metrics (operate.go).
	clock runClock
}

var _ engine.StepRunner = (*stepRunner)(nil)

func (r *stepRunner) RunTop(ctx context.Context, i int, name string, ex *exchange.Exchange, run func(context.Context) error) error {
	if i < r.in.StartStep {
		return nil // ran in an earlier segment; ex is the exchange before StartStep
	}
	if r.fatal != nil {
		// No step after one the store could not record (an error handler
		// that recovered would have the next step take its place).
		return r.fatal
	}
	r.at = i
	name = stableName(name)
	if i == r.in.StartStep && r.segment > 0 {
		if r.in.StartName != "" && name != r.in.StartName {
			r.internal = true
			return &ChangedError{Step: i, Was: r.in.StartName, Now: name}
		}
		if len(r.in.Answers) > 0 {
			ctx = WithResolutions(ctx, r.in.Answers)
		} else if r.in.Resolution != nil {
			ctx = WithResolution(ctx, *r.in.Resolution)
		}
	} else if r.segment == 0 && len(r.in.Answers) > 0 {
		// Answered before the run started (StartOptions.Answers).
		ctx = WithResolutions(ctx, r.in.Answers)
	}
	ctx = WithKey(ctx, fmt.Sprintf("%s/%d/0", r.run, i))
	stepName := strconv.Itoa(i) + " " + name
	if f := r.rt.storeFault; f != nil {
		if err := f(r.run, i); err != nil {
			return r.storeFailed(name, err)
		}
	}
	var res stepResult
	var err error
	fresh := false // the checkpoint was recorded now, not replayed
	if r.journaled[name] {
		// Its entries are steps of their own (DBOS does not nest steps), then
		// the exchange it ended with is one more.
		var runErr error
		if entries, done, err := r.recordedJournal(i, stepName+" end"); err != nil {
			return r.storeFailed(name, err)
		} else if done {
			// Ended before: the step is not entered again (what it does
			// between its entries would be done twice); its entries are
			// replayed so that the end's checkpoint is found where it is.
			for _, e := range entries {
				if _, err := dbos.RunAsStep(r.dctx, func(context.Context) (json.RawMessage, error) {
					return nil, fmt.Errorf("journal entry %s was recorded, yet not found", e)
				}, dbos.WithStepName(e)); err != nil {
					return r.storeFailed(name, err)
				}
			}
		} else {
			runErr = run(WithJournal(ctx, &journal{r: r, step: i}))
		}
		if r.fatal != nil {
			return r.fatal
		}
		ended := false
		res, err = dbos.RunAsStep(r.dctx, func(context.Context) (stepResult, error) {
			ended = true
			return r.result(ex, name, runErr), nil
		}, dbos.WithStepName(stepName+" end"))
		fresh = ended
	} else {
		began, called := time.Now(), false // not called: replayed from its checkpoint
		var ran time.Duration
		res, err = dbos.RunAsStep(r.dctx, func(context.Context) (stepResult, error) {
			r.clock.ran(r.rt.metrics)
			called = true
			t := time.Now()
			runErr := run(ctx)
			ran = time.Since(t)
			return r.result(ex, name, runErr), nil
		}, dbos.WithStepName(stepName))
		r.clock.observe(r.rt.metrics, began, called, ran) // operate.go
		fresh = called
	}
	if err != nil {
		return r.storeFailed(name, err)
	}
	if fresh {
		r.recordedAgain()
	}
	return r.apply(ex, name, res)
}

// recordedAgain ends the segment's store outage, if any, at a checkpoint the
// store kept: a later outage is timed from its own start.
func (r *stepRunner) recordedAgain() {
	if r.outage {
		r.outage = false
		r.rt.outages.end(segmentID(r.run, r.segment))
	}
}

// recordedJournal reports whether the segment recorded the end of journaled
// step i (its checkpoint named end) and, if so, the names of its journal
// entries in order. The segment's recorded steps are read once, when the first
// journaled step is reached, from outside the workflow (inside it, DBOS would
// record the reading as a step of its own).
func (r *stepRunner) recordedJournal(i int, end string) (entries []string, done bool, err error) {
	if r.recorded == nil {
		wfID := segmentID(r.run, r.segment)
		steps, err := dbos.GetWorkflowSteps(r.rt.dctx, wfID, dbos.WithStepsLoadOutput(false))
		if err != nil {
			return nil, false, err
		}
		r.recorded = make([]string, 0, len(steps))
		for _, s := range steps {
			r.recorded = append(r.recorded, s.StepName)
		}
	}
	prefix := strconv.Itoa(i) + "."
	for _, n := range r.recorded {
		switch {
		case n == end:
			return entries, true, nil
		case strings.HasPrefix(n, prefix):
			entries = append(entries, n)
		}
	}
	return nil, false, nil
}

// result is the checkpoint of step name, which ended with err and left ex.
func (r *stepRunner) result(ex *exchange.Exchange, name string, err error) stepResult {
	if ws := parkWaits(err); len(ws) > 0 {
		w := ws[0]
		res := stepResult{Park: &w, Snapshot: r.last}
		if len(ws) > 1 {
			res.Parks = ws
		}
		return res
	}
	snap, encErr := checkpointOf(ex).Encode(r.rt.opts.MaxCheckpoint)
	if encErr != nil {
		msg := fmt.Sprintf("checkpoint of step %s: %v", name, encErr)
		var big *exchange.SnapshotTooLargeError
		if errors.As(encErr, &big) {
			msg = fmt.Sprintf("checkpoint of step %s is %s, over helix.durable_max_checkpoint %s: keep large data out of the exchange (store it and pass a reference) or raise the limit",
				name, exchange.FormatBytes(big.Size), exchange.FormatBytes(big.Limit))
		}
		return stepResult{Failed: true, Internal: true, Error: msg}
	}
	if err != nil {
		// A panic is no answer of the step's work: a fault of Helix or of a
		// component, as internal as a checkpoint that cannot be kept.
		internal := engine.IsPanic(err) || errors.As(err, new(*journalChangedError))
		return stepResult{Failed: true, Internal: internal, Error: exchange.ClientMessage(err), Snapshot: snap}
	}
	return stepResult{Snapshot: snap}
}

// apply makes ex what the step's checkpoint recorded and returns the step's
// outcome to the pipeline.
func (r *stepRunner) apply(ex *exchange.Exchange, name string, res stepResult) error {
	if res.Park != nil {
		r.park, r.parks, r.parkName, r.parkSnap = res.Park, res.Parks, name, res.Snapshot
		return &ParkError{Wait: *res.Park}
	}
	if len(res.Snapshot) > 0 {
		s, err := exchange.DecodeSnapshot(res.Snapshot)
		if err != nil {
			r.internal = true
			return fmt.Errorf("checkpoint of step %s cannot be read: %w", name, err)
		}
		s.Restore(ex)
		r.last = res.Snapshot
	}
	if res.Failed {
		r.internal = res.Internal
		err := ex.Exception()
		if err == nil || len(res.Snapshot) == 0 {
			err = &exchange.SnapshotError{Message: res.Error, Client: res.Error, Class: exchange.ClassFault, Status: 500}
		}
		ex.SetException(err)
		return err
	}
	return nil
}

// storeFailed handles an error of DBOS itself around step name.
func (r *stepRunner) storeFailed(name string, err error) error {
	if unexpectedStep(err) {
		// The run recorded another step at this point: the workflow changed.
		r.internal = true
		return fmt.Errorf("workflow changed under a pending run at step %s (%v); finish or cancel pending runs before changing a durable workflow, or resume the run from its start", name, err)
	}
	r.fatal = err
	return err
}

// unexpectedStep reports whether err is DBOS finding another step recorded
// where the run now is.
func unexpectedStep(err error) bool {
	if errors.Is(err, dbos.ErrStepNondeterminism) {
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if de, ok := e.(*dbos.Error); ok && de.Code == dbos.ErrorCodeUnexpectedStep {
			return true
		}
	}
	return false
}

// ownershipLost reports whether err means this execution may not go on: the
// run was cancelled, or another execution owns it now.
func ownershipLost(err error) bool {
	return errors.Is(err, dbos.ErrWorkflowCancelled) || errors.Is(err, dbos.ErrConflictingWorkflowID)
}

// journal is the Journal of one journaled step: each entry is a DBOS step.
type journal struct {
	r    *stepRunner
	step int
	n    int
}

func (j *journal) Do(ctx context.Context, name string, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	j.n++
	type entry struct {
		Value json.RawMessage `json:"v,omitempty"`
		Error string          `json:"e,omitempty"`
	}
	fresh := false // recorded now, not replayed
	e, err := dbos.RunAsStep(j.r.dctx, func(context.Context) (entry, error) {
		fresh = true
		v, err := fn(ctx)
		if err != nil {
			return entry{Error: err.Error()}, nil
		}
		return entry{Value: v}, nil
	}, dbos.WithStepName(fmt.Sprintf("%d.%d %s", j.step, j.n, name)))
	if err != nil {
		if unexpectedStep(err) {
			return nil, &journalChangedError{msg: fmt.Sprintf("workflow changed under a pending run: journal entry %d of step %d is not %q", j.n, j.step, name)}
		}
		j.r.fatal = err
		return nil, err
	}
	if fresh {
		j.r.recordedAgain()
	}
	if e.Error != "" {
		return nil, errors.New(e.Error)
	}
	return e.Value, nil
}

// journalChangedError is a journal entry asked for under another name than
// the run recorded: the workflow changed (a failure in Helix, not in the step).
type journalChangedError struct{ msg string }

func (e *journalChangedError) Error() string { return e.msg }

// finish records how the segment ended (completed or failed) and returns it.
// internal: it failed in Helix itself (Run.Internal); its result is then the
// failure alone, not an exchange no step finished with.
func (rt *Runtime) finish(dctx dbos.Context, runID string, seg int, in RunInput, ex *exchange.Exchange, runErr error, step int, internal bool) (RunOutput, error) {
	state := StateCompleted
	var result json.RawMessage
	msg := ""
	internal = internal && runErr != nil
	if internal {
		ex = nil
	}
	if ex != nil {
		// The run's result keeps no size limit of its own beyond the checkpoints'.
		result, _ = checkpointOf(ex).Encode(0)
	}
	if runErr != nil {
		state = StateFailed
		msg = exchange.ClientMessage(runErr)
		if ex == nil {
			result, _ = (&exchange.Snapshot{Exception: &exchange.SnapshotError{Message: msg, Client: msg, Class: exchange.ClassFault, Status: 500}}).Encode(0)
		}
	}
	if err := rt.endRun(dctx, runID, seg, state, step, result, msg, internal); err != nil {
		return RunOutput{}, leavePending(err)
	}
	rt.wake(runID)
	return RunOutput{State: state, Step: step}, nil
}

// parkRun records that the segment parked and returns it.
func (rt *Runtime) parkRun(dctx dbos.Context, runID string, seg int, r *stepRunner) (RunOutput, error) {
	waits := r.parks
	if len(waits) == 0 {
		waits = []Wait{*r.park}
	}
	state := StateWaiting
	for _, w := range waits {
		if w.Kind == WaitApprove || w.Kind == WaitElicit {
			state = StateInputRequired // a person is asked, whatever else it waits for
		}
	}
	if err := rt.parkInStore(dctx, runID, seg, state, r.at, r.parkName, newStoredWait(waits), r.parkSnap); err != nil {
		return RunOutput{}, leavePending(err)
	}
	// The hooks first: whoever awaits the run finds them done.
	if run, err := rt.Get(context.WithoutCancel(dctx), runID); err == nil {
		rt.mu.Lock()
		hooks := append([]func(Run){}, rt.onPark...)
		rt.mu.Unlock()
		for _, f := range hooks {
			f(run)
		}
	}
	rt.wake(runID)
	return RunOutput{State: state, Step: r.at}, nil
}

// RunDurable is the engine's hand-off (engine.DurableRunner): it starts the
// run and waits for it, then leaves its result on ex. A run that parks
// answers at once with where it is: {"run_id", "state", "wait"}.
func (rt *Runtime) RunDurable(ctx context.Context, workflowID string, ex *exchange.Exchange) error {
	run, err := rt.Start(ctx, workflowID, ex, StartOptions{RunID: RunIDFrom(ctx, workflowID, ex)})
	if err != nil {
		ex.SetException(err)
		return err
	}
	if !run.State.Terminal() && run.Wait == nil {
		if run, err = rt.Await(ctx, run.ID); err != nil {
			ex.SetException(err)
			return err
		}
	}
	return applyRun(run, ex)
}

// applyRun leaves the end of run on ex.
func applyRun(run Run, ex *exchange.Exchange) error {
	ex.In().SetHeader(HeaderRunID, run.ID)
	switch run.State {
	case StateCompleted, StateFailed:
		s, err := exchange.DecodeSnapshot(run.Result)
		if err != nil {
			err = fmt.Errorf("durable run %s: its result cannot be read: %w", run.ID, err)
			ex.SetException(err)
			return err
		}
		s.Restore(ex)
		ex.In().SetHeader(HeaderRunID, run.ID)
		if run.State == StateFailed {
			if ex.Exception() == nil {
				ex.SetException(&exchange.SnapshotError{Message: run.Error, Client: run.Error, Class: exchange.ClassFault, Status: 500})
			}
			return ex.Exception()
		}
		return nil
	case StateCancelled:
		err := fmt.Errorf("durable run %s was cancelled", run.ID)
		ex.SetException(err)
		return err
	}
	body := map[string]any{"run_id": run.ID, "state": string(run.State)}
	if run.Wait != nil {
		w := map[string]any{"kind": run.Wait.Kind}
		if run.Wait.Message != "" {
			w["message"] = run.Wait.Message
		}
		if !run.Wait.Due.IsZero() {
			w["due"] = run.Wait.Due.UTC().Format(time.RFC3339)
		}
		body["wait"] = w
	}
	ex.In().SetBody(body)
	return nil
}

// HeaderRunID is the header a durable run's result carries its run id in.
const HeaderRunID = "HelixRunId"

// HeaderIdempotencyKey is the inbound header (an HTTP trigger's request
// header) whose value names the run: a repeat of the request with the same key
// gets the first run's result instead of a second run.
const HeaderIdempotencyKey = "Idempotency-Key"

// RunIDFrom is the run id an exchange of workflow asks for: the key its
// trigger gave the delivery (RegisterRunKey: a Kafka record's topic, partition
// and offset), else its Idempotency-Key header, made unique to the workflow; ""
// when it has none (a new run).
func RunIDFrom(_ context.Context, workflow string, ex *exchange.Exchange) string {
	key := ""
	for _, f := range registeredRunKeys() {
		if k, ok := f(ex); ok && k != "" {
			key = k
			break
		}
	}
	if key == "" {
		key = ex.In().HeaderString(HeaderIdempotencyKey)
	}
	if key == "" {
		for k, v := range ex.In().Headers() {
			if strings.EqualFold(k, HeaderIdempotencyKey) {
				key, _ = v.(string)
				break
			}
		}
	}
	if key == "" {
		return ""
	}
	// ~ marks a run's segments: it cannot be part of a run id.
	return workflow + ":" + strings.ReplaceAll(key, "~", "-")
}

var (
	runKeyMu sync.Mutex
	runKeys  []func(*exchange.Exchange) (string, bool)
)

// RegisterRunKey lets a trigger name what makes one of its deliveries unique
// (a Kafka record: topic/partition/offset), so that a delivery repeated after a
// crash (the record read again before its offset was committed) finds the run
// it started instead of starting another. f reads the exchange's headers; it is
// asked only for the exchanges of durable workflows. Register in an init
// function.
func RegisterRunKey(f func(*exchange.Exchange) (string, bool)) {
	runKeyMu.Lock()
	runKeys = append(runKeys, f)
	runKeyMu.Unlock()
}

func registeredRunKeys() []func(*exchange.Exchange) (string, bool) {
	runKeyMu.Lock()
	defer runKeyMu.Unlock()
	return runKeys
}

// stableName is a step's name (/srv/app/helix.yaml:12:9 to) without the
// directory of its file (helix.yaml:12:9 to): the same step whether Helix was
// started with a relative or an absolute path, or from another directory.
func stableName(name string) string {
	pos, kind, _ := strings.Cut(name, " ")
	if i := strings.LastIndexAny(pos, `/\`); i >= 0 {
		pos = pos[i+1:]
	}
	if kind == "" {
		return pos
	}
	return pos + " " + kind
}
