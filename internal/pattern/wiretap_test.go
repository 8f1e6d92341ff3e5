package pattern_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func mustWiretap(t *testing.T, hc *engine.Context, uri string, opts pattern.WiretapOptions) *pattern.Wiretap {
	t.Helper()
	w, err := pattern.NewWiretap(hc, uri, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWiretapSlowTapNeverDelaysMainAndStopCancelsIt(t *testing.T) {
	tapStarted := make(chan struct{})
	var tapCancelled atomic.Bool
	hc := engine.NewContext("t")
	slow := &engine.Workflow{ID: "audit", FromURI: "direct://audit", Processors: []engine.Processor{fn(func(ctx context.Context, ex *exchange.Exchange) error {
		close(tapStarted)
		select {
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
			tapCancelled.Store(true)
		}
		return nil
	})}}
	tap := mustWiretap(t, hc, "direct://audit", pattern.WiretapOptions{})
	main := &engine.Workflow{ID: "main", Processors: []engine.Processor{tap, setBody("main done")}}
	for _, w := range []*engine.Workflow{slow, main} {
		if err := hc.AddWorkflow(w); err != nil {
			t.Fatal(err)
		}
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ex := exchange.NewWithBody(exchange.InOut, "order")
	start := time.Now()
	if err := hc.Run(context.Background(), "main", ex); err != nil {
		t.Fatal(err)
	}
	// Generous bound: the tap blocks for 10 s; the main exchange must not wait for it.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("main exchange took %s: the wiretap delayed it", d)
	}
	if ex.In().Body() != "main done" {
		t.Errorf("body = %v", ex.In().Body())
	}
	<-tapStarted
	// Stop drains within its deadline, then cancels the tap; it must not wait 10 s.
	stopStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := hc.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	if d := time.Since(stopStart); d > 8*time.Second {
		t.Errorf("stop took %s: the tap was not cancelled", d)
	}
	if !tapCancelled.Load() {
		t.Error("the blocked tap did not see its context cancelled by Stop")
	}
}

func TestWiretapSendsCopyAndSurvivesFailures(t *testing.T) {
	var mu sync.Mutex
	var got []*exchange.Exchange
	record := &engine.Workflow{ID: "rec", FromURI: "direct://rec", Processors: []engine.Processor{fn(func(_ context.Context, ex *exchange.Exchange) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ex)
		ex.In().SetBody("tap changed its copy")
		return nil
	})}}
	failing := &engine.Workflow{ID: "bad", FromURI: "direct://bad", Processors: []engine.Processor{fn(func(context.Context, *exchange.Exchange) error {
		return errors.New("audit store down")
	})}}
	hc := newStarted(t, record, failing)

	good := mustWiretap(t, hc, "direct://${header.Tap}", pattern.WiretapOptions{})
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"id": 1})
	ex.In().SetHeader("Tap", "rec")
	if err := good.Process(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tap to arrive", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 })
	mu.Lock()
	tapped := got[0]
	mu.Unlock()
	if tapped.ID() == ex.ID() || tapped.Pattern() != exchange.InOnly {
		t.Errorf("tap must be an InOnly copy (id %s vs %s, pattern %v)", tapped.ID(), ex.ID(), tapped.Pattern())
	}
	if b, ok := ex.In().Body().(map[string]any); !ok || b["id"] != 1 {
		t.Errorf("the tap changed the main exchange's body: %v", ex.In().Body())
	}

	bad := mustWiretap(t, hc, "direct://bad", pattern.WiretapOptions{})
	ex2 := exchange.NewWithBody(exchange.InOut, "x")
	if err := bad.Process(context.Background(), ex2); err != nil || ex2.Exception() != nil {
		t.Fatalf("a failing tap failed the main exchange: %v / %v", err, ex2.Exception())
	}
	eventually(t, "the tap failure to be counted", func() bool { return bad.Failed() == 1 })

	unresolvable := mustWiretap(t, hc, "direct://${env:HELIX_TEST_UNSET_TAP_VARIABLE}", pattern.WiretapOptions{})
	if err := unresolvable.Process(context.Background(), ex2); err != nil {
		t.Fatalf("an unresolvable tap uri failed the main exchange: %v", err)
	}
	if unresolvable.Failed() != 1 {
		t.Errorf("Failed = %d, want 1", unresolvable.Failed())
	}
}

func TestWiretapDropsWhenFull(t *testing.T) {
	release := make(chan struct{})
	var arrived atomic.Int32
	blocked := &engine.Workflow{ID: "blocked", FromURI: "direct://blocked", Processors: []engine.Processor{fn(func(ctx context.Context, ex *exchange.Exchange) error {
		arrived.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})}}
	hc := newStarted(t, blocked)
	defer close(release) // before Stop (cleanups run after defers)
	w := mustWiretap(t, hc, "direct://blocked", pattern.WiretapOptions{MaxInFlight: 2})
	for range 5 {
		if err := w.Process(context.Background(), exchange.NewWithBody(exchange.InOut, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if d := w.Dropped(); d != 3 {
		t.Errorf("Dropped = %d, want 3 (5 taps, 2 slots, none released)", d)
	}
	eventually(t, "two taps in flight", func() bool { return arrived.Load() == 2 })
}

func TestWiretapValidation(t *testing.T) {
	hc := engine.NewContext("t")
	cases := []struct {
		hc      *engine.Context
		uri     string
		wantErr string
	}{
		{hc, "", "needs an endpoint uri"},
		{nil, "log://x", "needs an engine context"},
		{hc, "://nope", "wiretap"},
	}
	for _, tc := range cases {
		if _, err := pattern.NewWiretap(tc.hc, tc.uri, pattern.WiretapOptions{}); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("NewWiretap(%q): err = %v, want %q", tc.uri, err, tc.wantErr)
		}
	}
	// A static tap to an unknown scheme fails at Start, not silently per exchange.
	w := mustWiretap(t, hc, "nosuch://x", pattern.WiretapOptions{})
	if err := w.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "no component for scheme") {
		t.Errorf("Start: err = %v, want an unknown scheme error", err)
	}
}

// templateRecorder is a component that records the endpoint URIs it is asked for,
// with the template they were resolved from.
type templateRecorder struct {
	mu        sync.Mutex
	templates []string
	taps      chan string
}

func (r *templateRecorder) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	r.mu.Lock()
	r.templates = append(r.templates, u.Template)
	r.mu.Unlock()
	return &recordingEndpoint{raw: u.Raw, taps: r.taps}, nil
}

type recordingEndpoint struct {
	raw  string
	taps chan string
}

func (e *recordingEndpoint) URI() string { return e.raw }
func (e *recordingEndpoint) CreateProducer() (component.Producer, error) {
	return &recordingProducer{raw: e.raw, taps: e.taps}, nil
}
func (e *recordingEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type recordingProducer struct {
	component.NopService
	raw  string
	taps chan string
}

func (p *recordingProducer) Process(context.Context, *exchange.Exchange) error {
	p.taps <- p.raw
	return nil
}

// A placeholder tap URI is resolved like a target's: substituted values cannot add
// options, and the component sees the template (file:// uses it to keep a placeholder
// fileName inside its directory).
func TestWiretapPlaceholderURIResolvesLikeATarget(t *testing.T) {
	rec := &templateRecorder{taps: make(chan string, 1)}
	hc := engine.NewContext("t")
	hc.AddComponent("rec", rec)
	tmpl := "rec://audit?name=${header.name}"
	tap := mustWiretap(t, hc, tmpl, pattern.WiretapOptions{})
	if err := hc.AddWorkflow(&engine.Workflow{ID: "main", Processors: []engine.Processor{tap}}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer hc.Stop(context.Background())
	ex := exchange.NewWithBody(exchange.InOut, "x")
	ex.In().SetHeader("name", "a&admin=true")
	if err := hc.Run(context.Background(), "main", ex); err != nil {
		t.Fatal(err)
	}
	var got string
	select {
	case got = <-rec.taps:
	case <-time.After(10 * time.Second):
		t.Fatal("tap never arrived")
	}
	u, err := uri.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if u.Params.Has("admin") || u.Params.Get("name") != "a&admin=true" {
		t.Errorf("tap URI %q: the header's value added an option", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.templates) != 1 || rec.templates[0] != tmpl {
		t.Errorf("component saw templates %q, want [%q]", rec.templates, tmpl)
	}
}
