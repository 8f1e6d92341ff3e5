// Package durable runs workflows, agents and MCP tool calls whose progress is
// checkpointed in a store (SQLite under helix.data_dir, or PostgreSQL for
// replicas) so that a run cut off by a crash, a kill or a deploy resumes from its
// last checkpoint instead of starting over, and a run that waits (for a person, a
// timer, a callback) holds no goroutine while it waits.
//
// This file is the contract between the parts that build on it: the runtime (the
// store, the interpreter that checkpoints each top-level step), the components
// that carry idempotency keys, the agent's journal, the waiting steps, MCP Tasks
// and the operator's CLI.
package durable

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// ---- idempotency keys ------------------------------------------------------

type keyKey struct{}

// WithKey returns ctx carrying the idempotency key of the side effect a step is
// about to cause. The runtime sets <run id>/<step index>/<redelivery> before each
// top-level step; composite steps may refine it for their inner side effects.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyKey{}, key)
}

// KeyFrom returns the idempotency key ctx carries, if the run is durable.
// Components send it along (mcp:// in _meta "io.helix/idempotency-key", http://
// as Idempotency-Key, kafka:// as a header) or use it themselves (postgres://).
func KeyFrom(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyKey{}).(string)
	return k, ok && k != ""
}

// MetaKey is the _meta member an mcp:// call carries its idempotency key in.
const MetaKey = "io.helix/idempotency-key"

// ---- journal: checkpoints inside one step -----------------------------------

// Journal records the results of the parts of a long step (an agent's model
// turns and tool calls, an upstream MCP task id) so that a resumed run gets the
// recorded results instead of doing the work again.
type Journal interface {
	// Do returns the recorded result of the entry called name when the run
	// recorded one; otherwise it calls fn, records what it returns (its error
	// as a message) before returning it. Entries are matched in the order they
	// are asked for, and name must be the same on a resumed run (a different
	// name means the workflow changed: Do returns an error saying so).
	Do(ctx context.Context, name string, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error)
}

type journalKey struct{}

// WithJournal returns ctx carrying j.
func WithJournal(ctx context.Context, j Journal) context.Context {
	return context.WithValue(ctx, journalKey{}, j)
}

// JournalFrom returns the journal of the durable run ctx belongs to, or nil when
// the run is not durable (then callers just do the work).
func JournalFrom(ctx context.Context) Journal {
	j, _ := ctx.Value(journalKey{}).(Journal)
	return j
}

// ---- waits ----------------------------------------------------------------

// Wait kinds.
const (
	WaitApprove = "approve" // a person approves or rejects
	WaitElicit  = "elicit"  // a person answers a form (MCP elicitation)
	WaitSleep   = "sleep"   // a timer (sleep: / until:)
	WaitAwait   = "await"   // an HTTP callback or a Kafka record correlated by Key
)

// Wait describes what a parked run waits for.
type Wait struct {
	Kind string `json:"kind"`
	// Key correlates the resolution: the question id of an approve:/elicit:
	// step, the correlation key of an await:.
	Key string `json:"key,omitempty"`
	// Message is what the person is asked (approve:, elicit:).
	Message string `json:"message,omitempty"`
	// Schema is the requested form's JSON schema (elicit:).
	Schema json.RawMessage `json:"schema,omitempty"`
	// Source names where an await: result comes from ("http" or a Kafka topic).
	Source string `json:"source,omitempty"`
	// Due is when the wait ends by itself (a timer's end, or a timeout); zero
	// means never.
	Due time.Time `json:"due,omitzero"`
}

// Resolution kinds.
const (
	ResolvedApproved = "approved"
	ResolvedRejected = "rejected"
	ResolvedAnswered = "answered" // elicit: accepted, Data holds the content
	ResolvedDeclined = "declined" // elicit: declined or cancelled
	ResolvedTimeout  = "timeout"  // Due passed (also the end of a sleep:)
	ResolvedReceived = "received" // await: Data holds the callback body or record
)

// Resolution is how a wait ended.
type Resolution struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data,omitempty"`
	// By names who resolved it (an authenticated principal, "timer", a topic).
	By string `json:"by,omitempty"`
	// Key names the wait it ends (its Wait.Key) when the run waits for
	// several at once; empty ends the run's only wait.
	Key string `json:"key,omitempty"`
}

// ParkError is what a waiting step returns to park its durable run: the run's
// current segment ends (checkpointed, holding no goroutine) and the run goes on
// at the same step, with the [Resolution] in its context, once the wait is
// resolved. It is an engine Interrupt: no error handler sees it.
type ParkError struct{ Wait Wait }

func (e *ParkError) Error() string   { return "run parked: waits for " + e.Wait.Kind }
func (e *ParkError) Interrupt() bool { return true }

// Park returns the error that parks the run ctx belongs to at the step calling it.
func Park(w Wait) error { return &ParkError{Wait: w} }

type resolutionKey struct{}

// WithResolution returns ctx carrying how the wait of the step about to run ended.
func WithResolution(ctx context.Context, r Resolution) context.Context {
	return context.WithValue(ctx, resolutionKey{}, r)
}

// ResolutionFrom returns how the wait of the step now running ended, when the
// step is running again after parking; a waiting step that finds one applies it
// instead of parking again.
func ResolutionFrom(ctx context.Context) (Resolution, bool) {
	r, ok := ctx.Value(resolutionKey{}).(Resolution)
	return r, ok
}

type durableKey struct{}

// WithDurable marks ctx as belonging to a durable run.
func WithDurable(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, durableKey{}, runID)
}

// RunID returns the id of the durable run ctx belongs to; ok is false when the
// run is not durable (waiting steps then wait in memory as they always did).
func RunID(ctx context.Context) (id string, ok bool) {
	id, ok = ctx.Value(durableKey{}).(string)
	return id, ok && id != ""
}

// ---- runs -------------------------------------------------------------------

// State is where a run is.
type State string

// Run states. The names are MCP Tasks' where they overlap.
const (
	StateWorking       State = "working"
	StateInputRequired State = "input_required" // parked on approve:/elicit:
	StateWaiting       State = "waiting"        // parked on sleep:/until:/await:
	StateCompleted     State = "completed"
	StateFailed        State = "failed"
	StateCancelled     State = "cancelled"
)

// Terminal reports whether s is an end state.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCancelled
}

// Run is what the store knows about one run.
type Run struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	// Kind is the workflow's kind (workflow, tool, agent).
	Kind  string `json:"kind,omitempty"`
	State State  `json:"state"`
	// Segment counts the run's parts: it grows by one each time the run goes
	// on after a wait.
	Segment int `json:"segment"`
	// Step is the index of the top-level step the run is at (parked at, or
	// last checkpointed).
	Step int `json:"step"`
	// Wait is set while the run is parked.
	Wait *Wait `json:"wait,omitempty"`
	// Waits lists every wait not answered yet when the run parked on several
	// at once (parallel branches that each wait); Wait is the first of them.
	// Empty when the run parked on one wait only.
	Waits []Wait `json:"waits,omitempty"`
	// Principal is who started the run (MCP Tasks shows a run only to it).
	Principal string `json:"principal,omitempty"`
	// Attempts counts the executions of the current segment (1 + recoveries).
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// TTL is how long the run is kept after it ends (MCP Tasks' ttl); 0: the store's default.
	TTL time.Duration `json:"ttl,omitempty"`
	// Result is the exchange snapshot the run ended with (completed, failed:
	// decode it with exchange.DecodeSnapshot).
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the failure's message (failed).
	Error string `json:"error,omitempty"`
	// Internal is set on a run that failed in Helix itself rather than in
	// one of its steps: a checkpoint over helix.durable_max_checkpoint or not
	// encodable, an input that cannot be read, the store failing, the workflow
	// changed or gone under the pending run, a step that panicked. Its steps
	// gave no answer, so MCP Tasks shows it as failed with a JSON-RPC error
	// where a run whose step failed is a tool error.
	Internal bool `json:"internal,omitempty"`
}

// StartOptions tune [Runs.Start].
type StartOptions struct {
	// RunID is the run's id; a second Start with the same id returns the first
	// run (a repeat of the same request). Empty: a new id.
	RunID     string
	Principal string
	TTL       time.Duration
	// Answers are the resolutions, by wait key, of the questions asked
	// before the run started (an MCP task's input-required rounds): the
	// first segment's waiting steps with those keys take them and do not park.
	Answers map[string]Resolution
}

// Filter selects runs for [Runs.List].
type Filter struct {
	Workflow  string
	States    []State
	Principal string
	Limit     int
	// After is a cursor: the id of the last run of the previous page.
	After string
}

// StepRecord is one checkpointed step of a run, for operators.
type StepRecord struct {
	Segment int       `json:"segment"`
	Index   int       `json:"index"`
	Name    string    `json:"name"`
	At      time.Time `json:"at"`
	Bytes   int       `json:"bytes"`
	Error   string    `json:"error,omitempty"`
}

// Runs is the durable store as the rest of Helix sees it. Every method works on
// any replica sharing the store, after a restart too.
type Runs interface {
	// Start starts workflow on ex as a durable run (or returns the run RunID
	// names if it exists) and returns at once.
	Start(ctx context.Context, workflow string, ex *exchange.Exchange, opts StartOptions) (Run, error)
	// Await waits until the run ends or parks, or ctx ends.
	Await(ctx context.Context, runID string) (Run, error)
	// Get returns the run; [ErrNotFound] when there is none.
	Get(ctx context.Context, runID string) (Run, error)
	List(ctx context.Context, f Filter) ([]Run, error)
	Steps(ctx context.Context, runID string) ([]StepRecord, error)
	// Cancel cancels a run that has not ended; cancelling an ended run
	// returns it unchanged.
	Cancel(ctx context.Context, runID string) (Run, error)
	// Resolve ends the wait of a parked run and lets it go on;
	// [ErrNotWaiting] when it is not parked (or was resolved already: the
	// first resolution wins).
	Resolve(ctx context.Context, runID string, r Resolution) (Run, error)
	// Resume runs a failed or stuck run again from its last checkpoint.
	Resume(ctx context.Context, runID string) (Run, error)
}

// Errors of [Runs].
var (
	ErrNotFound   = errors.New("no such run")
	ErrNotWaiting = errors.New("the run is not waiting (it was resolved already, or never parked)")
)

// ---- where the parts find the store -----------------------------------------

var attached sync.Map // *engine.Context → Runs

// Attach makes r the durable store of the app whose engine is ec (the app does
// this at start, when any workflow is durable); Attach(ec, nil) detaches it.
func Attach(ec *engine.Context, r Runs) {
	if r == nil {
		attached.Delete(ec)
		return
	}
	attached.Store(ec, r)
}

// For returns the durable store of the app whose engine is ec, or nil when the
// app has none (no durable workflow).
func For(ec *engine.Context) Runs {
	r, _ := attached.Load(ec)
	runs, _ := r.(Runs)
	return runs
}
