// Package agents is the console's Agents page: the application's agents with
// their counters, and the transcripts of their recent runs — model turns, tool
// calls with their arguments and results, tokens, latency and errors — live
// while a run is in progress.
//
// The transcripts come from a [Recorder], an agent.Observer that keeps the last
// runs in a ring bounded by count and by bytes. Texts are redacted
// (internal/redact) and truncated as they are recorded. An agent run never
// waits for a page: writers share one short mutex among themselves, and pages
// read immutable snapshots published through atomic pointers, never taking it.
package agents

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Limits bound what a Recorder keeps; zero values mean the defaults.
type Limits struct {
	// MaxRuns is how many runs are kept (default 200); the oldest go first.
	MaxRuns int
	// MaxBytes bounds the text of all runs kept together (default 8 MiB); one
	// run may hold at most a quarter of it, its later entries are counted as
	// omitted.
	MaxBytes int64
	// MaxText is how much of one text (input, answer, turn, arguments, result)
	// is kept (default 4 KiB); the rest is cut with a note of its size.
	MaxText int
	// MaxEntries bounds the turns and tool results kept of one run (default 200).
	MaxEntries int
}

// Defaults of [Limits].
const (
	DefaultMaxRuns    = 200
	DefaultMaxBytes   = 8 << 20
	DefaultMaxText    = 4 << 10
	DefaultMaxEntries = 200
)

// entryOverhead is what an entry costs beyond its texts, counted in the byte
// budget so that many empty entries are bounded too.
const entryOverhead = 96

// Recorder keeps the transcripts of the last runs. It is the agent.Observer of
// the console; safe for concurrent use.
type Recorder struct {
	lim Limits

	mu    sync.Mutex // writers only: pages never take it
	seq   uint64
	ring  []*slot // oldest first
	bytes int64

	list    atomic.Pointer[[]*slot] // the ring as pages read it
	evicted atomic.Uint64
}

// slot is one recorded run: the writers' working copy (under Recorder.mu) and
// the snapshot pages read.
type slot struct {
	snap    atomic.Pointer[Run]
	cur     Run
	size    int64
	evicted bool
}

// NewRecorder returns an empty recorder with the limits lim.
func NewRecorder(lim Limits) *Recorder {
	if lim.MaxRuns <= 0 {
		lim.MaxRuns = DefaultMaxRuns
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxText <= 0 {
		lim.MaxText = DefaultMaxText
	}
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = DefaultMaxEntries
	}
	r := &Recorder{lim: lim}
	r.list.Store(&[]*slot{})
	return r
}

// Limits returns the recorder's limits with the defaults filled in.
func (r *Recorder) Limits() Limits { return r.lim }

// Run is a snapshot of one recorded run; it never changes once read.
type Run struct {
	ID        string
	Agent     string
	Principal string
	Server    string
	SessionID string
	Input     string
	Started   time.Time
	// Ended is zero while the run is in progress.
	Ended   time.Time
	Latency time.Duration
	Entries []Entry
	// Omitted counts the entries left out (MaxEntries, or the run's share of
	// MaxBytes).
	Omitted    int
	Answer     string
	Err        string
	Usage      agent.Usage
	Iterations int
	ToolCalls  int
	// Version grows with every change, so that a live page sends only news.
	Version uint64
}

// Running reports whether the run is still in progress.
func (r *Run) Running() bool { return r.Ended.IsZero() }

// State is the run's state as a word: running, failed or done.
func (r *Run) State() string {
	switch {
	case r.Running():
		return "running"
	case r.Err != "":
		return "failed"
	default:
		return "done"
	}
}

// EntryKind tells a model turn from a tool result.
type EntryKind string

const (
	KindTurn EntryKind = "turn"
	KindTool EntryKind = "tool"
)

// Entry is one model turn or one tool result.
type Entry struct {
	Kind EntryKind
	// Iteration is the model turn's number; a tool result has its turn's.
	Iteration int
	At        time.Time
	Latency   time.Duration
	Text      string
	Err       string
	// Turn only.
	Calls      []Call
	Usage      agent.Usage
	StopReason string
	// Tool result only.
	CallID, Name string
	IsError      bool
}

// Call is a tool call of a model turn.
type Call struct {
	ID, Name, Arguments string
}

// Runs returns the recorded runs, newest first.
func (r *Recorder) Runs() []*Run {
	l := *r.list.Load()
	out := make([]*Run, 0, len(l))
	for i := len(l) - 1; i >= 0; i-- {
		out = append(out, l[i].snap.Load())
	}
	return out
}

// Run returns the run with id, if it is still kept.
func (r *Recorder) Run(id string) (*Run, bool) {
	for _, s := range *r.list.Load() {
		if run := s.snap.Load(); run.ID == id {
			return run, true
		}
	}
	return nil, false
}

// Evicted counts the runs dropped to keep within the limits.
func (r *Recorder) Evicted() uint64 { return r.evicted.Load() }

// Bytes is what the kept runs hold, as the budget counts it.
func (r *Recorder) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

// clip redacts s and cuts it to MaxText bytes (on a rune boundary), saying how
// much was cut. Redaction runs on a bounded prefix, so that a huge text costs
// no more than a small one; a secret cut at that prefix's end lies beyond
// what is kept anyway.
func (r *Recorder) clip(s string) string {
	n := r.lim.MaxText
	if len(s) > 2*n {
		s2 := redact.Text(s[:2*n])
		return cut(s2, n, len(s))
	}
	s = redact.Text(s)
	if len(s) <= n {
		return s
	}
	return cut(s, n, len(s))
}

func cut(s string, n, total int) string {
	return console.Cut(s, n) + "… (" + strconv.Itoa(total) + " bytes, cut)"
}

// StartRun records a new run (agent.Observer).
func (r *Recorder) StartRun(_ context.Context, s agent.RunStart) agent.RunObserver {
	run := Run{Agent: s.Agent, Principal: r.clip(s.Owner.Principal), Server: s.Owner.Server,
		SessionID: r.clip(s.SessionID), Input: r.clip(s.Input), Started: s.Started}
	sl := &slot{}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	run.ID = strconv.FormatUint(r.seq, 10)
	sl.cur = run
	sl.size = int64(len(run.Input)+len(run.Principal)+len(run.SessionID)) + entryOverhead
	r.ring = append(r.ring, sl)
	r.bytes += sl.size
	r.publish(sl)
	r.trim(sl)
	return &observer{r: r, s: sl}
}

// publish makes sl's working copy what pages read. The entries slice is
// shared up to its length: entries are never changed once appended, so the
// snapshot stays as it was while the writer appends.
func (r *Recorder) publish(sl *slot) {
	sl.cur.Version++
	snap := sl.cur
	snap.Entries = slices.Clip(sl.cur.Entries)
	sl.snap.Store(&snap)
}

// trim evicts the oldest runs beyond the limits (never keep, the run being
// written, unless it alone is over) and publishes the ring.
func (r *Recorder) trim(keep *slot) {
	for len(r.ring) > r.lim.MaxRuns || (r.bytes > r.lim.MaxBytes && len(r.ring) > 1) {
		victim := r.ring[0]
		if victim == keep && len(r.ring) > 1 {
			victim = r.ring[1]
			r.ring = append(r.ring[:1], r.ring[2:]...)
		} else {
			r.ring = r.ring[1:]
		}
		victim.evicted = true
		r.bytes -= victim.size
		r.evicted.Add(1)
	}
	l := slices.Clone(r.ring)
	r.list.Store(&l)
}

// observer records one run's events.
type observer struct {
	r *Recorder
	s *slot
}

// add appends e to the run within its limits.
func (o *observer) add(e Entry, size int64) {
	r, sl := o.r, o.s
	r.mu.Lock()
	defer r.mu.Unlock()
	if sl.evicted {
		return
	}
	if len(sl.cur.Entries) >= r.lim.MaxEntries || sl.size+size > r.lim.MaxBytes/4 {
		sl.cur.Omitted++
		r.publish(sl)
		return
	}
	sl.cur.Entries = append(sl.cur.Entries, e)
	sl.size += size
	r.bytes += size
	r.publish(sl)
	if r.bytes > r.lim.MaxBytes {
		r.trim(sl)
	}
}

func (o *observer) ModelTurn(t agent.TurnEvent) {
	e := Entry{Kind: KindTurn, Iteration: t.Iteration, At: time.Now(), Latency: t.Latency, Text: o.r.clip(t.Text),
		Usage: t.Usage, StopReason: o.r.clip(t.StopReason)}
	size := int64(len(e.Text)+len(e.StopReason)) + entryOverhead
	if t.Err != nil {
		e.Err = o.r.clip(t.Err.Error())
		size += int64(len(e.Err))
	}
	for _, c := range t.ToolCalls {
		call := Call{ID: o.r.clip(c.ID), Name: o.r.clip(c.Name), Arguments: o.r.clip(string(c.Arguments))}
		e.Calls = append(e.Calls, call)
		size += int64(len(call.ID)+len(call.Name)+len(call.Arguments)) + entryOverhead/2
	}
	o.add(e, size)
}

func (o *observer) ToolResult(t agent.ToolEvent) {
	e := Entry{Kind: KindTool, At: time.Now(), Latency: t.Latency, Text: o.r.clip(t.Text), CallID: o.r.clip(t.CallID),
		Name: o.r.clip(t.Name), IsError: t.IsError}
	o.add(e, int64(len(e.Text)+len(e.CallID)+len(e.Name))+entryOverhead)
}

// End records how the run ended.
func (o *observer) End(e agent.RunEnd) {
	r, sl := o.r, o.s
	var answer, errText string
	res := e.Result
	if res == nil {
		res = &agent.Result{}
	}
	answer = r.clip(res.Text)
	if e.Err != nil {
		errText = r.clip(e.Err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if sl.evicted {
		return
	}
	sl.cur.Ended = sl.cur.Started.Add(e.Latency)
	sl.cur.Latency = e.Latency
	sl.cur.Answer, sl.cur.Err = answer, errText
	sl.cur.Usage, sl.cur.Iterations, sl.cur.ToolCalls = res.Usage, res.Iterations, res.ToolCalls
	size := int64(len(answer) + len(errText))
	sl.size += size
	r.bytes += size
	r.publish(sl)
	if r.bytes > r.lim.MaxBytes {
		r.trim(sl)
	}
}

// Tracer is the engine tracer that makes rec observe the agent runs of every
// exchange; has tells whether the application has agents at all (read when an
// exchange starts: without agents the tracer adds nothing to any exchange).
func Tracer(rec *Recorder, has func() bool) engine.Tracer {
	return tracer{rec: rec, has: has}
}

type tracer struct {
	rec *Recorder
	has func() bool
}

func noEnd(error) {}

func (t tracer) StartExchange(ctx context.Context, _, _, _ string, _ *exchange.Exchange) (context.Context, func(error)) {
	if !t.has() {
		return ctx, noEnd
	}
	return agent.WithObserver(ctx, t.rec), noEnd
}

func (t tracer) StartStep(ctx context.Context, _ string, _ int, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, noEnd
}
