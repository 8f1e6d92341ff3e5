package durable_test

import (
	"context"
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

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	helixstep "github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

// waitingApp is startApp (a durable workflow on a runtime over dir) whose
// steps are built from YAML, with the wait service the app gives them: the
// callback route on srv, timers and the park hook.
type waitingApp struct {
	*app
	w   *durable.Waits
	srv *httptest.Server
}

// buildSteps builds YAML steps for hc; notify: targets go to capture://.
func buildSteps(t *testing.T, hc *engine.Context, src string) []engine.Processor {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := config.NewDecoder("w.yaml")
	bc := helixstep.NewBuildContext(hc)
	ps := helixstep.BuildSteps(bc, d.Steps(doc.Content[0], "steps"))
	if errs := append(d.Errors(), bc.Errors()...); len(errs) > 0 {
		t.Fatal(errs)
	}
	return ps
}

// startWaiting starts the app on dir; base is the callback route's address
// (the same across restarts, as a real deployment's is).
func startWaiting(t *testing.T, dir string, steps []engine.Processor, hc *engine.Context, base *string) *waitingApp {
	t.Helper()
	a := startApp(t, dir, steps...)
	wa := &waitingApp{app: a}
	wa.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { wa.w.CallbackHandler().ServeHTTP(rw, r) }))
	if *base == "" {
		*base = wa.srv.URL
	}
	w, err := durable.NewWaits(durable.WaitsOptions{Secret: secret, BaseURL: *base, Runs: a.rt})
	if err != nil {
		t.Fatal(err)
	}
	wa.w = w
	durable.AttachWaits(hc, w)
	w.Listen(a.rt)
	if err := w.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wa.stop)
	return wa
}

func (wa *waitingApp) stop() {
	wa.srv.Close()
	wa.w.Close()
	wa.app.stop()
}

// do sends a request to url through the app's callback route (the address in
// a link may be a previous process's).
func (wa *waitingApp) do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	path := url[strings.Index(url, durable.CallbackPath):]
	req, _ := http.NewRequest(method, wa.srv.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// An approve: run waits across two restarts of its process and completes
// after the approval, which comes by the link sent before the first restart;
// the steps before the wait do not run again.
func TestApproveWaitsAcrossTwoRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var base string
	var before atomic.Int32
	notified := make(chan string, 4)
	mk := func(hc *engine.Context) []engine.Processor {
		hc.AddComponent("capture", capture(func(ex *exchange.Exchange) { notified <- ex.In().HeaderString(helixstep.HeaderApprovalURL) }))
		ps := buildSteps(t, hc, `
- approve:
    message: "Ship ${body}?"
    notify: [{target: "capture://chat"}]
- set-body: {constant: "${body} shipped by ${header.HelixApprovalBy}"}
`)
		return append([]engine.Processor{appendTo("w.yaml:1:1 first", &before)}, ps...)
	}
	hc := engine.NewContext("build")
	a := startWaiting(t, dir, mk(hc), hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "order-7"), durable.StartOptions{RunID: "order-7"})
	if err != nil {
		t.Fatal(err)
	}
	if run, err = a.rt.Await(ctx, run.ID); err != nil || run.State != durable.StateInputRequired || run.Wait.Message != "Ship order-7+w.yaml:1:1 first?" {
		t.Fatalf("parked: %+v %v", run, err)
	}
	link := <-notified
	a.stop()

	for restart := 1; restart <= 2; restart++ {
		hc := engine.NewContext("build")
		b := startWaiting(t, dir, mk(hc), hc, &base)
		run, err := b.rt.Get(ctx, "order-7")
		if err != nil || run.State != durable.StateInputRequired {
			t.Fatalf("restart %d: %+v %v", restart, run, err)
		}
		if code, body := b.do(t, http.MethodGet, link, ""); code != 200 || !strings.Contains(body, "Ship order-7") {
			t.Fatalf("restart %d: the link shows %d %s", restart, code, body)
		}
		if restart == 1 {
			b.stop()
			continue
		}
		if code, body := b.do(t, http.MethodPost, link, `{"decision":"approve"}`); code != 200 {
			t.Fatalf("approve: %d %s", code, body)
		}
		if code, _ := b.do(t, http.MethodPost, link, `{"decision":"reject"}`); code != 410 {
			t.Errorf("the link a second time: %d, want 410", code)
		}
		run, err = b.rt.Await(ctx, "order-7")
		if err != nil || run.State != durable.StateCompleted {
			t.Fatalf("after the approval: %+v %v", run, err)
		}
		s, _ := exchange.DecodeSnapshot(run.Result)
		if s.Body != "order-7+w.yaml:1:1 first shipped by callback link" || before.Load() != 1 {
			t.Errorf("body %q; the step before the wait ran %d times", s.Body, before.Load())
		}
	}
}

// A sleep: whose time passes while no process runs ends right after the
// next start. The sleep is long enough that the run is seen parked and the
// application stopped before it ends, also on a loaded machine (at 300 ms a
// test run beside six builds saw it already completed).
func TestSleepAcrossARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var base string
	hc := engine.NewContext("build")
	a := startWaiting(t, dir, buildSteps(t, hc, "- sleep: 3s\n- set-body: {constant: woke}"), hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: "nap"}); err != nil {
		t.Fatal(err)
	}
	run, err := a.rt.Await(ctx, "nap")
	if err != nil || run.State != durable.StateWaiting || run.Wait == nil || run.Wait.Kind != durable.WaitSleep {
		t.Fatalf("parked: %+v %v", run, err)
	}
	a.stop()
	time.Sleep(time.Until(run.Wait.Due)) // the behaviour under test: the time passes while nothing runs

	hc = engine.NewContext("build")
	b := startWaiting(t, dir, buildSteps(t, hc, "- sleep: 3s\n- set-body: {constant: woke}"), hc, &base)
	testtools.Eventually(t, "the overdue timer ended the sleep after the restart", func() bool {
		run, err = b.rt.Get(ctx, "nap")
		return err == nil && run.State == durable.StateCompleted
	})
	if s, _ := exchange.DecodeSnapshot(run.Result); s.Body != "woke" || time.Since(start) < 3*time.Second {
		t.Errorf("body %v after %s", s.Body, time.Since(start))
	}
	if got, _ := b.rt.Get(ctx, "nap"); got.Segment != 1 {
		t.Errorf("segments: %d, want 1 (one wait)", got.Segment)
	}
}

// An approval racing the approve: step's timeout on the store: one wins,
// the run goes on once, and the loser is told (410) or does nothing (timer).
func TestApproveVersusTimeoutOnTheStore(t *testing.T) {
	t.Parallel()
	var base string
	hc := engine.NewContext("build")
	links := make(chan string, 64)
	hc.AddComponent("capture", capture(func(ex *exchange.Exchange) { links <- ex.In().HeaderString(helixstep.HeaderApprovalURL) }))
	a := startWaiting(t, t.TempDir(), buildSteps(t, hc, `
- approve: {message: "ok?", timeout: 500ms, on_timeout: continue, notify: [{target: "capture://x"}]}
`), hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 20
	results := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("race-%d", i)
		if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: id}); err != nil {
			t.Fatal(err)
		}
		// Parked, or already timed out on a slow machine: the race below
		// then has a sure winner, which is fine.
		if run, err := a.rt.Await(ctx, id); err != nil || (run.State != durable.StateInputRequired && run.State != durable.StateCompleted) {
			t.Fatalf("%+v %v", run, err)
		}
		link := <-links
		wg.Go(func() {
			// Approve near the deadline, so that either may win.
			if run, _ := a.rt.Get(ctx, id); run.Wait != nil {
				time.Sleep(time.Until(run.Wait.Due) + time.Duration(i%5-2)*time.Millisecond)
			}
			code, _ := a.do(t, http.MethodPost, link, `{"decision":"approve"}`)
			var run durable.Run
			var err error
			for run, err = a.rt.Await(ctx, id); err == nil && !run.State.Terminal(); run, err = a.rt.Await(ctx, id) {
				time.Sleep(5 * time.Millisecond) // Await answers at once while the run is still parked
			}
			if err != nil || run.State != durable.StateCompleted {
				t.Errorf("%s: %+v %v", id, run, err)
				return
			}
			s, _ := exchange.DecodeSnapshot(run.Result)
			outcome, _ := s.Headers[helixstep.HeaderApproval].(string)
			switch {
			case code == 200 && outcome == "approved", code == 410 && outcome == "timeout":
			default:
				t.Errorf("%s: the callback got %d but the run went on with %q", id, code, outcome)
			}
			if run.Segment != 1 {
				t.Errorf("%s: %d segments, want 1: the run went on twice", id, run.Segment)
			}
			mu.Lock()
			results[outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("outcomes: %v", results)
	testtools.Eventually(t, "nothing left parked", func() bool {
		rs, _ := a.rt.List(ctx, durable.Filter{States: []durable.State{durable.StateInputRequired}})
		return len(rs) == 0
	})
}

// capture is a producer-only component that hands each exchange to f.
type capture func(*exchange.Exchange)

func (c capture) CreateEndpoint(*uri.URI) (component.Endpoint, error) { return captureEndpoint{c}, nil }

type captureEndpoint struct{ f capture }

func (e captureEndpoint) URI() string                                 { return "capture://" }
func (e captureEndpoint) CreateProducer() (component.Producer, error) { return captureProducer(e), nil }
func (e captureEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type captureProducer captureEndpoint

func (p captureProducer) Process(_ context.Context, ex *exchange.Exchange) error { p.f(ex); return nil }
func (p captureProducer) Start(context.Context) error                            { return nil }
func (p captureProducer) Stop(context.Context) error                             { return nil }

// 1000 runs parked on the real store hold no goroutine and little memory:
// each parked run's DBOS workflow has ended, and its timer is a
// time.AfterFunc. (Heap and speed under the race detector are not the
// program's: `make allocs` runs it without.)
func TestParkedRunsOnTheStoreHoldNoGoroutineAllocs(t *testing.T) { // not parallel: counts the process's goroutines
	testtools.SkipAllocsUnderRace(t)
	var base string
	hc := engine.NewContext("build")
	a := startWaiting(t, t.TempDir(), buildSteps(t, hc, `- approve: {message: "ok?", timeout: 1h}`), hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	park := func(from, to int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("p-%d", i)
			if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: id}); err != nil {
				t.Fatal(err)
			}
			if run, err := a.rt.Await(ctx, id); err != nil || run.State != durable.StateInputRequired {
				t.Fatalf("%s: %+v %v", id, run, err)
			}
		}
	}
	park(0, 10) // warm up: pools, DBOS's own goroutines
	runtime.GC()
	g0 := runtime.NumGoroutine()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	park(10, 1010)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	// A few goroutines come and go (the database pool, DBOS's queue runner):
	// a goroutine per parked run would be a thousand.
	if g := runtime.NumGoroutine(); g > g0+20 {
		t.Errorf("1000 parked runs: %d goroutines, %d before", g, g0)
	}
	if grew := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); grew > 8<<20 {
		t.Errorf("1000 parked runs kept %d bytes of heap", grew)
	}
	rs, err := a.rt.List(ctx, durable.Filter{States: []durable.State{durable.StateInputRequired}, Limit: 2000})
	if err != nil || len(rs) != 1010 {
		t.Errorf("parked runs in the store: %d %v", len(rs), err)
	}
}

// The store resolves a wait of a given segment only while the run is parked
// in it: a timer of an earlier wait finds the run gone on.
func TestResolveSegmentOnTheStore(t *testing.T) {
	t.Parallel()
	var base string
	hc := engine.NewContext("build")
	a := startWaiting(t, t.TempDir(), buildSteps(t, hc, `
- approve: {message: "one?", id: one}
- approve: {message: "two?", id: two}
`), hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: "seg"}); err != nil {
		t.Fatal(err)
	}
	if run, err := a.rt.Await(ctx, "seg"); err != nil || run.Segment != 0 || run.Wait == nil {
		t.Fatalf("%+v %v", run, err)
	}
	if _, err := a.rt.ResolveSegment(ctx, "seg", 1, durable.Resolution{Kind: durable.ResolvedApproved}); err != durable.ErrNotWaiting {
		t.Fatalf("a later segment's resolution: %v", err)
	}
	if _, err := a.rt.ResolveSegment(ctx, "seg", 0, durable.Resolution{Kind: durable.ResolvedApproved}); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the run parked on its second wait", func() bool {
		run, err := a.rt.Get(ctx, "seg")
		return err == nil && run.Segment == 1 && run.Wait != nil && run.Wait.Key == "two"
	})
	if _, err := a.rt.ResolveSegment(ctx, "seg", 0, durable.Resolution{Kind: durable.ResolvedTimeout}); err != durable.ErrNotWaiting {
		t.Fatalf("the first wait's timer, late: %v", err)
	}
	if run, _ := a.rt.Get(ctx, "seg"); run.State != durable.StateInputRequired || run.Wait.Key != "two" {
		t.Errorf("the late timer changed the run: %+v", run)
	}
}
