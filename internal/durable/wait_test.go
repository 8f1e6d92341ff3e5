package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/exchange"
)

// fakeRuns is a store of parked runs with the store's one rule that matters
// here: the first resolution of a wait wins, later ones get ErrNotWaiting.
type fakeRuns struct {
	Runs
	mu       sync.Mutex
	runs     map[string]*Run
	resolved map[string][]Resolution // run id → the resolutions that won, in order
	gets     atomic.Int64
}

func newFakeRuns() *fakeRuns {
	return &fakeRuns{runs: map[string]*Run{}, resolved: map[string][]Resolution{}}
}

func (f *fakeRuns) park(id string, segment int, w Wait) Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	state := StateWaiting
	if w.Kind == WaitApprove || w.Kind == WaitElicit {
		state = StateInputRequired
	}
	r := &Run{ID: id, State: state, Segment: segment, Wait: &w}
	f.runs[id] = r
	return *r
}

func (f *fakeRuns) Get(_ context.Context, id string) (Run, error) {
	f.gets.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return Run{}, ErrNotFound
	}
	out := *r
	if r.Wait != nil {
		w := *r.Wait
		out.Wait = &w
	}
	return out, nil
}

func (f *fakeRuns) Resolve(ctx context.Context, id string, res Resolution) (Run, error) {
	return f.ResolveSegment(ctx, id, -1, res)
}

func (f *fakeRuns) ResolveSegment(_ context.Context, id string, segment int, res Resolution) (Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return Run{}, ErrNotFound
	}
	if r.Wait == nil || (segment >= 0 && r.Segment != segment) {
		return *r, ErrNotWaiting
	}
	r.Wait, r.State = nil, StateWorking
	r.Segment++
	f.resolved[id] = append(f.resolved[id], res)
	return *r, nil
}

func (f *fakeRuns) List(_ context.Context, flt Filter) ([]Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Run
	for _, r := range f.runs {
		if r.Wait != nil && r.ID > flt.After {
			out = append(out, *r)
		}
	}
	// the store pages by id
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].ID < out[i].ID {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	if flt.Limit > 0 && len(out) > flt.Limit {
		out = out[:flt.Limit]
	}
	return out, nil
}

func (f *fakeRuns) resolutions(id string) []Resolution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Resolution(nil), f.resolved[id]...)
}

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func newTestWaits(t *testing.T, runs Runs, base string) *Waits {
	t.Helper()
	w, err := NewWaits(WaitsOptions{Secret: testSecret, BaseURL: base, Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func TestNewWaitsRefusesAShortSecret(t *testing.T) {
	t.Parallel()
	if _, err := NewWaits(WaitsOptions{Secret: []byte("short")}); err == nil || !strings.Contains(err.Error(), "32 bytes") {
		t.Fatalf("a short secret: %v", err)
	}
}

// serve starts the callback route of w and returns its base URL.
func serve(t *testing.T, w **Waits) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc(CallbackPath, func(rw http.ResponseWriter, r *http.Request) { (*w).CallbackHandler().ServeHTTP(rw, r) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func post(t *testing.T, url, contentType, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url, accept string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The callback URL of a parked durable run: GET only shows it (a chat's link
// preview must not approve), the first POST resolves it, a second one finds it
// gone, an altered or made-up link is refused, and the URL is the same after a
// restart (a new Waits with the same secret).
func TestCallbackResolvesADurableRunOnce(t *testing.T) {
	t.Parallel()
	runs := newFakeRuns()
	var w *Waits
	base := serve(t, &w)
	w = newTestWaits(t, runs, base)
	wt := Wait{Kind: WaitApprove, Key: "ship", Message: "Ship order <b>7</b>?"}
	runs.park("run-1", 0, wt)
	url := w.URL("run-1", wt)
	if !strings.HasPrefix(url, base+CallbackPath) {
		t.Fatalf("url %q", url)
	}
	again := newTestWaits(t, runs, base)
	if again.URL("run-1", wt) != url {
		t.Error("the URL of a parked run changed with a new Waits (a restart): links sent before it would stop working")
	}

	code, body := get(t, url, "text/html")
	if code != 200 || !strings.Contains(body, "Ship order &lt;b&gt;7&lt;/b&gt;?") || !strings.Contains(body, `value="approve"`) {
		t.Errorf("GET page: %d %s", code, body)
	}
	code, body = get(t, url, "application/json")
	if code != 200 || !strings.Contains(body, `"waiting"`) {
		t.Errorf("GET json: %d %s", code, body)
	}
	if n := len(runs.resolutions("run-1")); n != 0 {
		t.Fatalf("GET resolved the run (%d resolutions)", n)
	}

	if code, body := post(t, url, "application/json", `{"decision":"maybe"}`); code != 400 || !strings.Contains(body, "decision=approve") {
		t.Errorf("a decision that is none: %d %s", code, body)
	}
	forged := url[:len(url)-3] + "AAA"
	if code, body := post(t, forged+"?decision=approve", "", ""); code != 403 || !strings.Contains(body, "not valid") {
		t.Errorf("an altered link: %d %s", code, body)
	}
	other := w.URL("run-2", wt) // a valid link to a run that does not exist
	if code, _ := post(t, other+"?decision=approve", "", ""); code != 410 {
		t.Errorf("a link to no run: %d, want 410", code)
	}
	if code, body := post(t, url, "application/x-www-form-urlencoded", "decision=approve"); code != 200 || !strings.Contains(body, "approved") {
		t.Fatalf("approve: %d %s", code, body)
	}
	if got := runs.resolutions("run-1"); len(got) != 1 || got[0].Kind != ResolvedApproved || got[0].By != "callback link" {
		t.Fatalf("resolutions %+v", got)
	}
	if code, body := post(t, url, "application/json", `{"decision":"reject"}`); code != 410 || !strings.Contains(body, "used already") {
		t.Errorf("a second use: %d %s", code, body)
	}
	if code, _ := get(t, url, "application/json"); code != 410 {
		t.Errorf("GET after use: %d", code)
	}
	if got := runs.resolutions("run-1"); len(got) != 1 {
		t.Errorf("a replayed link resolved again: %+v", got)
	}
	// The same run parked later on another wait: the old link does not reach it.
	runs.park("run-1", 1, Wait{Kind: WaitApprove, Key: "pay"})
	if code, _ := post(t, url+"?decision=approve", "", ""); code != 410 {
		t.Errorf("an old link on a later wait: %d, want 410", code)
	}
}

func TestCallbackBodies(t *testing.T) {
	t.Parallel()
	runs := newFakeRuns()
	var w *Waits
	base := serve(t, &w)
	w = newTestWaits(t, runs, base)

	aw := Wait{Kind: WaitAwait, Key: "await-1"}
	runs.park("a", 0, aw)
	if code, body := post(t, w.URL("a", aw), "application/json", `{"paid":true,"n":3}`); code != 200 {
		t.Fatalf("await POST: %d %s", code, body)
	}
	got := runs.resolutions("a")
	if len(got) != 1 || got[0].Kind != ResolvedReceived || !strings.Contains(string(got[0].Data), `"body":{"paid":true,"n":3}`) {
		t.Errorf("await resolution %+v (%s)", got, got[0].Data)
	}
	runs.park("big", 0, aw)
	if code, _ := post(t, w.URL("big", aw), "text/plain", strings.Repeat("x", MaxCallbackBody+1)); code != 413 {
		t.Errorf("a body over the limit: %d, want 413", code)
	}
	if len(runs.resolutions("big")) != 0 {
		t.Error("a body over the limit resolved the run")
	}

	ew := Wait{Kind: WaitElicit, Key: "form"}
	runs.park("e", 0, ew)
	if code, body := post(t, w.URL("e", ew), "application/json", `{"action":"accept","content":[1]}`); code != 400 || !strings.Contains(body, "object") {
		t.Errorf("elicit content no object: %d %s", code, body)
	}
	if code, body := post(t, w.URL("e", ew), "application/json", `{"action":"accept","content":{"name":"Ada"}}`); code != 200 {
		t.Fatalf("elicit: %d %s", code, body)
	}
	if got := runs.resolutions("e"); len(got) != 1 || got[0].Kind != ResolvedAnswered || string(got[0].Data) != `{"name":"Ada"}` {
		t.Errorf("elicit resolution %+v", got)
	}
	sw := Wait{Kind: WaitSleep, Due: time.Now().Add(time.Hour)}
	runs.park("s", 0, sw)
	if code, body := post(t, w.URL("s", sw), "application/json", `{}`); code != 400 || !strings.Contains(body, "timer") {
		t.Errorf("a sleep by callback: %d %s", code, body)
	}
	if code, _ := post(t, base+CallbackPath+"x", "", ""); code != 403 {
		t.Errorf("garbage token: %d", code)
	}
	req, _ := http.NewRequest(http.MethodDelete, w.URL("s", sw), nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 405 {
		t.Errorf("DELETE: %v %v", resp, err)
	}
}

// A wait in memory (a run that is not durable) raced by its callback and its
// timeout: exactly one wins, and both sides agree which.
func TestMemoryWaitApproveVersusTimeout(t *testing.T) {
	t.Parallel()
	w := newTestWaits(t, nil, "http://helix.test")
	wins := map[string]int{}
	for i := range 500 {
		h := w.Hold(Wait{Kind: WaitApprove, Key: "k", Due: time.Now().Add(time.Duration(i%5) * 50 * time.Microsecond)})
		tok := h.URL[strings.LastIndex(h.URL, "/")+1:]
		errc := make(chan error, 1)
		go func() {
			_, err := w.ResolveToken(context.Background(), tok, Resolution{Kind: ResolvedApproved})
			errc <- err
		}()
		r, err := h.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cerr := <-errc
		switch {
		case r.Kind == ResolvedApproved && cerr == nil:
		case r.Kind == ResolvedTimeout && errors.Is(cerr, ErrGone):
		default:
			t.Fatalf("iteration %d: wait ended %q, the callback got %v", i, r.Kind, cerr)
		}
		wins[r.Kind]++
	}
	t.Logf("winners: %v", wins)
}

// A durable run's timer raced by its approval: the store lets one through,
// and the loser sees that it lost (the timer does nothing, the callback 410).
func TestDurableApproveVersusTimer(t *testing.T) {
	t.Parallel()
	runs := newFakeRuns()
	w := newTestWaits(t, runs, "http://helix.test")
	const n = 1000
	var lost atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("run-%04d", i)
		wt := Wait{Kind: WaitApprove, Key: "k", Due: time.Now().Add(time.Duration(i%7) * 100 * time.Microsecond)}
		run := runs.park(id, 0, wt)
		tok := w.URL(id, wt)
		tok = tok[strings.LastIndex(tok, "/")+1:]
		w.Parked(context.Background(), run)
		wg.Go(func() {
			if _, err := w.ResolveToken(context.Background(), tok, Resolution{Kind: ResolvedApproved}); errors.Is(err, ErrGone) {
				lost.Add(1)
			} else if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	testtools.Eventually(t, "every run resolved", func() bool {
		for i := range n {
			if len(runs.resolutions(fmt.Sprintf("run-%04d", i))) == 0 {
				return false
			}
		}
		return true
	})
	timeouts := 0
	for i := range n {
		got := runs.resolutions(fmt.Sprintf("run-%04d", i))
		if len(got) != 1 {
			t.Fatalf("run %d resolved %d times: %+v", i, len(got), got)
		}
		if got[0].Kind == ResolvedTimeout {
			timeouts++
		}
	}
	if int64(timeouts) != lost.Load() {
		t.Errorf("%d runs timed out but %d approvals were told they lost", timeouts, lost.Load())
	}
	t.Logf("%d of %d timed out first", timeouts, n)
}

// A timer armed for one wait does not end a later wait of the same run.
func TestTimerOfAnEarlierWaitIsANoOp(t *testing.T) {
	t.Parallel()
	runs := newFakeRuns()
	w := newTestWaits(t, runs, "")
	first := runs.park("r", 0, Wait{Kind: WaitApprove, Key: "a", Due: time.Now().Add(20 * time.Millisecond)})
	w.Parked(context.Background(), first)
	if _, err := runs.Resolve(context.Background(), "r", Resolution{Kind: ResolvedApproved}); err != nil {
		t.Fatal(err)
	}
	runs.park("r", 1, Wait{Kind: WaitApprove, Key: "b"}) // parked again before the old timer fires; not told to Waits
	gets := runs.gets.Load()
	testtools.Eventually(t, "the old timer fired", func() bool { return runs.gets.Load() > gets })
	if got := runs.resolutions("r"); len(got) != 1 || got[0].Kind != ResolvedApproved {
		t.Errorf("resolutions %+v: the old timer ended the later wait", got)
	}
}

// At start, every parked run's timer is armed again; one whose time passed
// while nothing ran fires at once, and one still due does not.
func TestRestoreArmsTimersOfParkedRuns(t *testing.T) {
	t.Parallel()
	runs := newFakeRuns()
	for i := range 1203 { // more than one page
		runs.park(fmt.Sprintf("p%04d", i), 2, Wait{Kind: WaitSleep, Due: time.Now().Add(-time.Minute)})
	}
	runs.park("later", 0, Wait{Kind: WaitSleep, Due: time.Now().Add(time.Hour)})
	runs.park("forever", 0, Wait{Kind: WaitApprove, Key: "x"})
	w := newTestWaits(t, runs, "")
	if err := w.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the overdue timers fired", func() bool {
		for i := range 1203 {
			if len(runs.resolutions(fmt.Sprintf("p%04d", i))) != 1 {
				return false
			}
		}
		return true
	})
	if got := runs.resolutions("p0000"); got[0].Kind != ResolvedTimeout || got[0].By != "timer" {
		t.Errorf("resolution %+v", got)
	}
	if len(runs.resolutions("later")) != 0 || len(runs.resolutions("forever")) != 0 {
		t.Error("a run not due was resolved")
	}
}

// A record for an await: that comes before the run parks waits in the inbox
// and is taken when the run parks; one that comes after goes to the run at once;
// one nobody claims within the inbox's time is dropped.
func TestAwaitInbox(t *testing.T) {
	t.Parallel()
	runs := newFakeRuns()
	now := time.Now()
	var clock atomic.Int64
	w, err := NewWaits(WaitsOptions{Secret: testSecret, Runs: runs, InboxTTL: time.Minute,
		Now: func() time.Time { return now.Add(time.Duration(clock.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	data := json.RawMessage(`{"body":{"ok":1}}`)
	if err := w.Deliver(ctx, "topic", "42", data); err != nil {
		t.Fatal(err)
	}
	w.Parked(ctx, runs.park("early", 0, Wait{Kind: WaitAwait, Key: "42", Source: "topic"}))
	if got := runs.resolutions("early"); len(got) != 1 || string(got[0].Data) != string(data) || got[0].By != "topic" {
		t.Fatalf("early record: %+v", got)
	}
	w.Parked(ctx, runs.park("late", 0, Wait{Kind: WaitAwait, Key: "43", Source: "topic"}))
	if len(runs.resolutions("late")) != 0 {
		t.Fatal("resolved without a record")
	}
	if err := w.Deliver(ctx, "topic", "43", data); err != nil {
		t.Fatal(err)
	}
	if got := runs.resolutions("late"); len(got) != 1 {
		t.Fatalf("late record: %+v", got)
	}
	if err := w.Deliver(ctx, "other-topic", "44", data); err != nil {
		t.Fatal(err)
	}
	w.Parked(ctx, runs.park("wrong-source", 0, Wait{Kind: WaitAwait, Key: "44", Source: "topic"}))
	if len(runs.resolutions("wrong-source")) != 0 {
		t.Error("a record of another source resolved the run")
	}
	if err := w.Deliver(ctx, "topic", "45", data); err != nil {
		t.Fatal(err)
	}
	clock.Store(int64(2 * time.Minute))
	w.Parked(ctx, runs.park("expired", 0, Wait{Kind: WaitAwait, Key: "45", Source: "topic"}))
	if len(runs.resolutions("expired")) != 0 {
		t.Error("an expired record resolved the run")
	}
	// In memory too: a record before Hold is taken by it.
	if err := w.Deliver(ctx, "topic", "46", data); err != nil {
		t.Fatal(err)
	}
	h := w.Hold(Wait{Kind: WaitAwait, Key: "46", Source: "topic"})
	r, err := h.Wait(ctx)
	if err != nil || r.Kind != ResolvedReceived {
		t.Errorf("in memory: %+v %v", r, err)
	}
}

// 1000 parked durable runs with timers hold no goroutine and little memory:
// a timer is a time.AfterFunc, which runs nothing until it fires.
func TestParkedRunsHoldNoGoroutine(t *testing.T) { // not parallel: counts the process's goroutines
	runs := newFakeRuns()
	w := newTestWaits(t, runs, "http://helix.test")
	parked := make([]Run, 1000)
	for i := range parked {
		kind := []string{WaitApprove, WaitSleep, WaitAwait, WaitElicit}[i%4]
		parked[i] = runs.park(fmt.Sprintf("r%d", i), 0, Wait{Kind: kind, Key: fmt.Sprint(i), Source: "t", Due: time.Now().Add(time.Hour)})
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	for _, r := range parked {
		w.Parked(context.Background(), r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if g := runtime.NumGoroutine(); g > g0 {
		t.Errorf("1000 parked runs: %d goroutines, %d before", g, g0)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("1000 parked runs took %d bytes of heap (over 1 MiB)", grew)
	}
	w.mu.Lock()
	timers := len(w.timers)
	w.mu.Unlock()
	if timers != 1000 {
		t.Errorf("%d timers armed, want 1000", timers)
	}
}

func TestExchangeData(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body any
		want string
	}{
		{[]byte(`{"a":1}`), `{"body":{"a":1}}`},
		{[]byte("plain"), `{"body":"plain"}`},
		{`[1,2]`, `{"body":[1,2]}`},
		{map[string]any{"x": "y"}, `{"body":{"x":"y"}}`},
	} {
		got, err := exchangeData(exchange.NewWithBody(exchange.InOnly, c.body))
		if err != nil || string(got) != c.want {
			t.Errorf("%v: %s %v, want %s", c.body, got, err, c.want)
		}
	}
}

// Sweep finds parked runs nobody told this process about (another replica
// parked them and died) and arms their timers.
func TestSweepFindsRunsParkedElsewhere(t *testing.T) {
	t.Parallel()
	runs := newFakeRuns()
	w := newTestWaits(t, runs, "")
	w.Sweep(5 * time.Millisecond)
	runs.park("elsewhere", 3, Wait{Kind: WaitSleep, Due: time.Now().Add(-time.Second)})
	testtools.Eventually(t, "the sweep resolved the overdue run", func() bool { return len(runs.resolutions("elsewhere")) == 1 })
	w.Close()
	runs.park("after-close", 0, Wait{Kind: WaitSleep, Due: time.Now().Add(-time.Second)})
	gets := runs.gets.Load()
	time.Sleep(30 * time.Millisecond) // an observation window: no sweep after Close
	if runs.gets.Load() != gets || len(runs.resolutions("after-close")) != 0 {
		t.Error("Waits swept after Close")
	}
}
