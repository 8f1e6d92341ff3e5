package durable

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Waits is what resolves the waits of an app's runs besides an operator's
// Runs.Resolve: signed callback URLs (approve:, elicit:, await: over HTTP),
// records correlated by key (await: from a consumer endpoint), and the timers of
// sleep:, until: and timeouts.
//
// A durable run's wait is in the store, not here: Waits keeps only what it can
// rebuild from the store at start ([Waits.Restore]): one time.AfterFunc per
// timer (which holds no goroutine until it fires) and an index of the keys
// awaited runs wait for. A run that is not durable waits in memory, holding its
// goroutine as waiting steps always did; its waiter is registered here so that
// the same callback route reaches it.
type Waits struct {
	secret   []byte
	baseURL  string
	runs     Runs
	log      *slog.Logger
	inboxTTL time.Duration
	now      func() time.Time

	mu       sync.Mutex
	memory   map[string]*memoryWaiter // nonce → waiter of a run that is not durable
	timers   map[timerKey]*time.Timer // the timer of each wait of a parked run
	awaited  map[awaitKey]parkedAt    // (source, key) → the durable run that waits for it
	inbox    map[awaitKey][]inboxItem // records that came before anyone waited for them
	inboxN   int                      // records in inbox, expired ones included
	inboxMax int                      // maxInbox (tests lower it)
	sweeper  *time.Timer              // the next Sweep
	sweeps   sync.WaitGroup           // sweeps under way (Close waits for them)
	closed   bool
}

// WaitsOptions configure [NewWaits].
type WaitsOptions struct {
	// Secret signs callback URLs. It must be the same on every replica and
	// across restarts, or the URLs of parked runs stop working; at least 32 bytes.
	Secret []byte
	// BaseURL is where the callback route is reachable from outside
	// (https://helix.example.com); empty: approve:/await: have no callback URL.
	BaseURL string
	// Runs is the durable store; nil when the app has no durable workflow.
	Runs Runs
	// InboxTTL is how long a record that no run waits for yet is kept for a run
	// that parks later (default one hour).
	InboxTTL time.Duration
	Logger   *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// CallbackPath is the path of the callback route; a callback URL is
// BaseURL + CallbackPath + token.
const CallbackPath = "/helix/callbacks/"

// defaultInboxTTL keeps an early record long enough for a run that is a step or
// two away from its await: to park, without keeping records nobody claims forever.
const defaultInboxTTL = time.Hour

// maxInbox bounds the records kept for runs that have not parked yet; past it
// a record is refused (its consumer offers it again later) rather than dropped.
const maxInbox = 100000

// NewWaits returns the wait service of one app.
func NewWaits(o WaitsOptions) (*Waits, error) {
	if len(o.Secret) < 32 {
		return nil, errors.New("durable waits: the callback secret must have at least 32 bytes")
	}
	w := &Waits{secret: append([]byte(nil), o.Secret...), baseURL: strings.TrimRight(o.BaseURL, "/"), runs: o.Runs,
		log: o.Logger, inboxTTL: o.InboxTTL, now: o.Now,
		memory: map[string]*memoryWaiter{}, timers: map[timerKey]*time.Timer{},
		awaited: map[awaitKey]parkedAt{}, inbox: map[awaitKey][]inboxItem{}, inboxMax: maxInbox}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.inboxTTL <= 0 {
		w.inboxTTL = defaultInboxTTL
	}
	if w.now == nil {
		w.now = time.Now
	}
	return w, nil
}

// Close stops every timer; waiters in memory get ErrWaitsClosed. A sweep
// under way ends before it returns.
func (w *Waits) Close() {
	defer w.sweeps.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.sweeper != nil {
		w.sweeper.Stop()
	}
	for id, t := range w.timers {
		t.Stop()
		delete(w.timers, id)
	}
	for n, m := range w.memory {
		delete(w.memory, n)
		close(m.closed)
	}
}

// ErrWaitsClosed ends an in-memory wait when the app stops.
var ErrWaitsClosed = errors.New("the application is stopping")

// ---- callback tokens ----------------------------------------------------------

// token is what a callback URL names: the run and its wait. A durable run's
// token is the same after a restart (it is derived from the run and the wait,
// signed with the app's secret), so a URL sent before a restart still works;
// it works once, because the store lets only the first resolution through. A
// waiter in memory has a random nonce instead of a run id.
type token struct {
	Run   string `json:"r,omitempty"`
	Nonce string `json:"n,omitempty"`
	Kind  string `json:"k"`
	Key   string `json:"q,omitempty"`
}

func (w *Waits) sign(t token) string {
	payload, _ := json.Marshal(t)
	mac := hmac.New(sha256.New, w.secret)
	mac.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// errForged is a token whose signature does not match: a made-up or altered URL.
var errForged = errors.New("this callback link is not valid (altered or made up)")

// maxToken bounds what the route reads as a token before checking it.
const maxToken = 4096

func (w *Waits) verify(s string) (token, error) {
	var t token
	p, sig, ok := strings.Cut(s, ".")
	if !ok || len(s) > maxToken {
		return t, errForged
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return t, errForged
	}
	mac := hmac.New(sha256.New, w.secret)
	mac.Write(payload)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return t, errForged
	}
	if err := json.Unmarshal(payload, &t); err != nil || (t.Run == "") == (t.Nonce == "") {
		return t, errForged
	}
	return t, nil
}

// URL returns the callback URL that resolves the wait of durable run runID,
// or "" when the app has no base URL for callbacks.
func (w *Waits) URL(runID string, wt Wait) string {
	if w == nil || w.baseURL == "" {
		return ""
	}
	return w.baseURL + CallbackPath + w.sign(token{Run: runID, Kind: wt.Kind, Key: wt.Key})
}

// ---- waiting in memory (a run that is not durable) -----------------------------

type memoryWaiter struct {
	wait   Wait
	done   chan Resolution // buffered: the one resolution that won
	closed chan struct{}
}

// Held is a wait of a run that is not durable, registered so that the callback
// route (and correlated records) can end it.
type Held struct {
	// URL is the callback URL ("" without a base URL).
	URL   string
	w     *Waits
	nonce string
	m     *memoryWaiter
}

// Hold registers a wait of a run that is not durable; call Wait on the result,
// and Release when done.
func (w *Waits) Hold(wt Wait) *Held {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := &Held{w: w, nonce: hex.EncodeToString(b), m: &memoryWaiter{wait: wt, done: make(chan Resolution, 1), closed: make(chan struct{})}}
	w.mu.Lock()
	if w.closed {
		close(h.m.closed)
	} else {
		w.memory[h.nonce] = h.m
	}
	w.mu.Unlock()
	if w.baseURL != "" {
		h.URL = w.baseURL + CallbackPath + w.sign(token{Nonce: h.nonce, Kind: wt.Kind, Key: wt.Key})
	}
	if wt.Kind == WaitAwait && wt.Source != "" {
		if data, ok := w.takeInbox(awaitKey{wt.Source, wt.Key}); ok {
			h.resolve(Resolution{Kind: ResolvedReceived, Data: data, By: wt.Source})
		}
	}
	return h
}

// Release unregisters the wait: its URL stops working.
func (h *Held) Release() {
	h.w.mu.Lock()
	delete(h.w.memory, h.nonce)
	h.w.mu.Unlock()
}

// resolve offers r; only the first offer counts. It reports whether r won.
func (h *Held) resolve(r Resolution) bool {
	h.w.mu.Lock()
	_, waiting := h.w.memory[h.nonce]
	delete(h.w.memory, h.nonce)
	h.w.mu.Unlock()
	if !waiting {
		return false
	}
	h.m.done <- r
	return true
}

// Resolve ends the wait with r, as the callback route would; false when it was
// resolved already.
func (h *Held) Resolve(r Resolution) bool { return h.resolve(r) }

// Wait waits for the resolution, until ctx ends or the wait's Due passes (then
// the resolution is a timeout). Whichever comes first wins; the others find the
// wait gone.
func (h *Held) Wait(ctx context.Context) (Resolution, error) {
	defer h.Release()
	var due <-chan time.Time
	if !h.m.wait.Due.IsZero() {
		t := time.NewTimer(h.m.wait.Due.Sub(h.w.now()))
		defer t.Stop()
		due = t.C
	}
	select {
	case r := <-h.m.done:
		return r, nil
	case <-due:
		if h.resolve(Resolution{Kind: ResolvedTimeout, By: "timer"}) {
			return Resolution{Kind: ResolvedTimeout, By: "timer"}, nil
		}
		return <-h.m.done, nil // a resolution won the race by a hair
	case <-h.m.closed:
		return Resolution{}, ErrWaitsClosed
	case <-ctx.Done():
		if !h.resolveGone() {
			return <-h.m.done, nil
		}
		return Resolution{}, ctx.Err()
	}
}

// resolveGone unregisters the wait unless a resolution won already; it reports
// whether it did.
func (h *Held) resolveGone() bool {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	_, waiting := h.w.memory[h.nonce]
	delete(h.w.memory, h.nonce)
	return waiting
}

// ---- resolving ----------------------------------------------------------------

// Errors of [Waits.ResolveToken].
var (
	// ErrGone: the wait was resolved already, or the run went on, ended or
	// was cancelled; the link cannot be used again.
	ErrGone = errors.New("this callback link was used already or its run no longer waits for it")
	// ErrWrongKind: the resolution does not fit the wait (an approval for an await:).
	ErrWrongKind = errors.New("this resolution does not fit what the run waits for")
)

// Describe returns the wait a callback token names, for the route's page; it
// changes nothing. ErrGone when nobody waits for it any more.
func (w *Waits) Describe(ctx context.Context, tok string) (Wait, error) {
	t, err := w.verify(tok)
	if err != nil {
		return Wait{}, err
	}
	if t.Nonce != "" {
		w.mu.Lock()
		m, ok := w.memory[t.Nonce]
		w.mu.Unlock()
		if !ok {
			return Wait{}, ErrGone
		}
		return m.wait, nil
	}
	run, err := w.parkedRun(ctx, t)
	if err != nil {
		return Wait{}, err
	}
	return *run.Wait, nil
}

// parkedRun returns the run a durable token names when it still waits for
// the token's wait.
func (w *Waits) parkedRun(ctx context.Context, t token) (Run, error) {
	if w.runs == nil {
		return Run{}, ErrGone
	}
	run, err := w.runs.Get(ctx, t.Run)
	if errors.Is(err, ErrNotFound) {
		return Run{}, ErrGone
	}
	if err != nil {
		return Run{}, err
	}
	if run.State.Terminal() || run.Wait == nil {
		return Run{}, ErrGone
	}
	for _, wt := range pendingWaits(run) {
		if wt.Kind == t.Kind && wt.Key == t.Key {
			run.Wait = &wt // the wait the token names, of those the run waits for
			return run, nil
		}
	}
	return Run{}, ErrGone
}

// ResolveToken resolves the wait a callback token names with r (what the
// callback route does). The first resolution wins: a second one, or one for a
// run that went on, gets ErrGone; a forged token an error saying so.
func (w *Waits) ResolveToken(ctx context.Context, tok string, r Resolution) (Wait, error) {
	t, err := w.verify(tok)
	if err != nil {
		return Wait{}, err
	}
	if !fits(t.Kind, r.Kind) {
		return Wait{}, fmt.Errorf("%w: %s waits for %s", ErrWrongKind, t.Kind, resolutionsOf(t.Kind))
	}
	if t.Nonce != "" {
		w.mu.Lock()
		m, ok := w.memory[t.Nonce]
		w.mu.Unlock()
		if !ok || !(&Held{w: w, nonce: t.Nonce, m: m}).resolve(r) {
			return Wait{}, ErrGone
		}
		return m.wait, nil
	}
	run, err := w.parkedRun(ctx, t)
	if err != nil {
		return Wait{}, err
	}
	r.Key = t.Key
	if err := w.resolveRun(ctx, run, r); err != nil {
		return Wait{}, err
	}
	return *run.Wait, nil
}

// fits reports whether a resolution of kind r may end a wait of kind k.
func fits(k, r string) bool {
	switch k {
	case WaitApprove:
		return r == ResolvedApproved || r == ResolvedRejected
	case WaitElicit:
		return r == ResolvedAnswered || r == ResolvedDeclined
	case WaitAwait:
		return r == ResolvedReceived
	}
	return false // sleep: ends by its timer only
}

func resolutionsOf(k string) string {
	switch k {
	case WaitApprove:
		return "approve or reject"
	case WaitElicit:
		return "an answer (accept with content, or decline)"
	case WaitAwait:
		return "a body"
	}
	return "its timer"
}

// SegmentResolver is implemented by a store that can resolve a run's wait only
// while the run is still parked in the segment the resolver saw: a timer armed
// for one wait must not end a later one of the same run. Stores without it are
// resolved after a Get (a narrow race, documented).
type SegmentResolver interface {
	ResolveSegment(ctx context.Context, runID string, segment int, r Resolution) (Run, error)
}

// resolveRun resolves the current wait of run (as read by the caller); the
// store decides who was first. ErrGone when it was not this one.
func (w *Waits) resolveRun(ctx context.Context, run Run, r Resolution) error {
	var err error
	var after Run
	if sr, ok := w.runs.(SegmentResolver); ok {
		after, err = sr.ResolveSegment(ctx, run.ID, run.Segment, r)
	} else {
		after, err = w.runs.Resolve(ctx, run.ID, r)
	}
	if errors.Is(err, ErrNotWaiting) || errors.Is(err, ErrNotFound) {
		return ErrGone
	}
	if err == nil {
		if len(after.Waits) > 0 && after.Segment == run.Segment {
			// Other waits of the run are still open: only this one is over.
			key := r.Key
			if key == "" && run.Wait != nil {
				key = run.Wait.Key
			}
			w.forgetWait(run.ID, key)
		} else {
			w.forget(run.ID)
		}
	}
	return err
}

// ---- parked durable runs: timers and correlation ---------------------------------

type awaitKey struct{ source, key string }

type parkedAt struct {
	run     string
	segment int
}

// ParkHook is what a runtime that tells about parked runs offers
// (durable.Runtime.OnPark).
type ParkHook interface{ OnPark(func(Run)) }

// Listen asks the runtime r to tell w about every run of this process that
// parks, when it can.
func (w *Waits) Listen(r Runs) {
	if h, ok := r.(ParkHook); ok {
		h.OnPark(func(run Run) { w.Parked(context.Background(), run) })
	}
}

// Parked is told that a durable run parked (the runtime calls it, and
// [Waits.Restore] for every parked run at start): it arms the wait's timer,
// and for an await: on a source it resolves the run at once with a record
// that came early, or remembers what it waits for.
func (w *Waits) Parked(ctx context.Context, run Run) {
	if run.Wait == nil || run.State.Terminal() {
		return
	}
	for _, wt := range pendingWaits(run) {
		w.parkedOn(ctx, run, wt)
	}
}

// parkedOn arms the timer of one wait of a parked run, or takes the record an
// await: waits for (see Parked).
func (w *Waits) parkedOn(ctx context.Context, run Run, wt Wait) {
	if wt.Kind == WaitAwait && wt.Source != "" {
		k := awaitKey{wt.Source, wt.Key}
		if data, ok := w.takeInbox(k); ok {
			if err := w.resolveRun(ctx, run, Resolution{Kind: ResolvedReceived, Data: data, By: wt.Source, Key: wt.Key}); err != nil && !errors.Is(err, ErrGone) {
				w.log.Warn("durable: an await: could not take the record that came before it parked", "run", run.ID, "error", err)
				_ = w.putInbox(k, data) // keep it for the next try (it fit before)
			} else {
				return
			}
		}
		w.mu.Lock()
		w.awaited[k] = parkedAt{run.ID, run.Segment}
		w.mu.Unlock()
	}
	if !wt.Due.IsZero() {
		w.arm(run.ID, run.Segment, wt.Key, wt.Due)
	}
}

// timerKey names the timer of one wait of a run: a run waiting for several
// things at once has one timer per wait, each ending its own wait only.
type timerKey struct{ run, wait string }

// arm starts the timer of the wait key of a parked run; a timer that was armed
// for it before (an earlier wait, or the same one told twice) is replaced.
func (w *Waits) arm(runID string, segment int, key string, due time.Time) {
	fire := func() { w.fire(runID, segment, key) }
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	tk := timerKey{runID, key}
	if t, ok := w.timers[tk]; ok {
		t.Stop()
	}
	w.timers[tk] = time.AfterFunc(due.Sub(w.now()), fire)
}

// fire resolves the run with a timeout if it still waits for the wait the
// timer was armed for; an approval that came first makes it a no-op.
func (w *Waits) fire(runID string, segment int, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.mu.Lock()
	delete(w.timers, timerKey{runID, key})
	w.mu.Unlock()
	run, err := w.runs.Get(ctx, runID)
	// The segment names the wait: a run that went on and parked again is in a
	// later one. (Due is not compared: a store may keep it less precisely.)
	if err != nil || run.Wait == nil || run.Segment != segment || run.State.Terminal() {
		return
	}
	res := Resolution{Kind: ResolvedTimeout, By: "timer"}
	if len(run.Waits) > 0 {
		res.Key = key // one of several waits: its timeout ends it only
	}
	err = w.resolveRun(ctx, run, res)
	if err != nil && !errors.Is(err, ErrGone) {
		w.log.Warn("durable: a timer could not resolve its run; the next start or sweep tries again", "run", runID, "error", err)
	}
}

// forget drops what Waits holds for a run whose wait ended.
func (w *Waits) forget(runID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for tk, t := range w.timers {
		if tk.run == runID {
			t.Stop()
			delete(w.timers, tk)
		}
	}
	for k, p := range w.awaited {
		if p.run == runID {
			delete(w.awaited, k)
		}
	}
}

// forgetWait drops the timer of one wait of a run that still waits for others.
func (w *Waits) forgetWait(runID, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.timers[timerKey{runID, key}]; ok {
		t.Stop()
		delete(w.timers, timerKey{runID, key})
	}
}

// Restore arms the timers and rebuilds the await index of every parked run in
// the store (at start, and now and then on replicas, so that the runs of a
// replica that died are not forgotten). A timer whose time passed while no
// process ran fires at once.
func (w *Waits) Restore(ctx context.Context) error {
	if w.runs == nil {
		return nil
	}
	after := ""
	for {
		page, err := w.runs.List(ctx, Filter{States: []State{StateInputRequired, StateWaiting}, Limit: 500, After: after})
		if err != nil {
			return fmt.Errorf("durable waits: listing parked runs: %w", err)
		}
		for _, r := range page {
			w.Parked(ctx, r)
		}
		if len(page) < 500 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// SweepInterval is how often [Waits.Sweep] looks at the store again.
const SweepInterval = 30 * time.Second

// Sweep runs Restore now and every interval until Close: parked runs this
// process was not told about (another replica parked them, and died) get their
// timers and their records too. It holds no goroutine between sweeps.
func (w *Waits) Sweep(interval time.Duration) {
	var sweep func()
	sweep = func() {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		w.sweeps.Add(1) // Close waits for it
		w.mu.Unlock()
		defer w.sweeps.Done()
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		err := w.Restore(ctx)
		cancel()
		if err != nil {
			w.log.Warn("durable: looking for parked runs failed; trying again later", "error", err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.closed {
			w.sweeper = time.AfterFunc(interval, sweep)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed && w.runs != nil {
		w.sweeper = time.AfterFunc(interval, sweep)
	}
}

// Deliver hands a record that came from an await: source to the run that
// waits for key, or keeps it (for InboxTTL) for a run that parks later.
func (w *Waits) Deliver(ctx context.Context, source, key string, data json.RawMessage) error {
	k := awaitKey{source, key}
	w.mu.Lock()
	var held *Held
	for n, m := range w.memory {
		if m.wait.Kind == WaitAwait && m.wait.Source == source && m.wait.Key == key {
			held = &Held{w: w, nonce: n, m: m}
			break
		}
	}
	p, parked := w.awaited[k]
	w.mu.Unlock()
	if held != nil && held.resolve(Resolution{Kind: ResolvedReceived, Data: data, By: source}) {
		return nil
	}
	if parked && w.runs != nil {
		run, err := w.runs.Get(ctx, p.run)
		if err == nil && run.Segment == p.segment {
			err = w.resolveRun(ctx, run, Resolution{Kind: ResolvedReceived, Data: data, By: source, Key: key})
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrGone) && !errors.Is(err, ErrNotFound) {
			return err // the consumer retries the record
		}
		w.mu.Lock()
		delete(w.awaited, k)
		w.mu.Unlock()
	}
	return w.putInbox(k, data)
}

type inboxItem struct {
	data    json.RawMessage
	expires time.Time
}

func (w *Waits) putInbox(k awaitKey, data json.RawMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.inboxN >= w.inboxMax { // sweep the expired ones only when it matters
		w.inboxN = 0
		for key, items := range w.inbox {
			items = unexpired(items, now)
			if len(items) == 0 {
				delete(w.inbox, key)
				continue
			}
			w.inbox[key] = items
			w.inboxN += len(items)
		}
	}
	if w.inboxN >= w.inboxMax {
		// Refused, not dropped: the source's consumer holds the record and
		// offers it again (deliverPatiently), by when old records expired or
		// their runs took them.
		return ErrInboxFull
	}
	w.inbox[k] = append(w.inbox[k], inboxItem{data: data, expires: now.Add(w.inboxTTL)})
	w.inboxN++
	return nil
}

// ErrInboxFull refuses a record no run waits for while the inbox holds
// maxInbox records.
var ErrInboxFull = errors.New("durable: the await inbox is full (records that no run waits for yet)")

func (w *Waits) takeInbox(k awaitKey) (json.RawMessage, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	items := unexpired(w.inbox[k], w.now())
	if len(items) == 0 {
		delete(w.inbox, k)
		return nil, false
	}
	w.inboxN -= len(w.inbox[k]) - len(items) + 1
	first := items[0]
	if len(items) == 1 {
		delete(w.inbox, k)
	} else {
		w.inbox[k] = items[1:]
	}
	return first.data, true
}

func unexpired(items []inboxItem, now time.Time) []inboxItem {
	i := 0
	for i < len(items) && !now.Before(items[i].expires) {
		i++
	}
	return items[i:]
}
