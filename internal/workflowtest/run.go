package workflowtest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// DefaultTimeout bounds one case when neither its timeout: nor the runner sets one.
const DefaultTimeout = 10 * time.Second

// abandonGrace is how long a case that timed out may take to notice that its
// context ended before the runner gives up on it.
const abandonGrace = time.Second

// inProcessTriggers are the trigger schemes started for a case: calls between
// workflows of one application, which open no port and read from no outside source.
var inProcessTriggers = []string{"direct", "tool", "agent"}

// RunOptions tune [Suite.Run]. The zero value runs every case with DefaultTimeout.
type RunOptions struct {
	// Timeout is the default per-case timeout; a case's timeout: wins.
	Timeout time.Duration
	// Filter, when set, runs only the cases whose name it matches.
	Filter *regexp.Regexp
}

// Result is the outcome of one case.
type Result struct {
	Case config.TestConfig
	// Failures are the expectations that did not hold, one line each; none means
	// the case passed.
	Failures []string
	Elapsed  time.Duration
}

// Passed reports whether every expectation of the case held.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// Run runs the cases (those Filter selects) one after the other and hands each
// result to report as soon as it is known.
func (s *Suite) Run(ctx context.Context, opts RunOptions, report func(Result)) []Result {
	var results []Result
	for _, tc := range s.Cases {
		if opts.Filter != nil && !opts.Filter.MatchString(tc.Name) {
			continue
		}
		timeout := cmpOr(tc.Timeout, opts.Timeout, DefaultTimeout)
		start := time.Now()
		failures := s.runCase(ctx, tc, timeout)
		r := Result{Case: tc, Failures: failures, Elapsed: time.Since(start)}
		results = append(results, r)
		if report != nil {
			report(r)
		}
	}
	return results
}

func cmpOr(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// runCase builds an application for tc, runs its workflow on the input and checks
// the expectations.
func (s *Suite) runCase(ctx context.Context, tc config.TestConfig, timeout time.Duration) []string {
	warnings := s.cfg.Warnings
	a, err := app.Build(s.cfg, s.opts)
	s.cfg.Warnings = warnings
	if err != nil { // Load built the same configuration without errors
		return []string{"cannot build the application: " + err.Error()}
	}
	hc := a.Context()
	ms := newMocks(tc.Mocks)
	hc.OverrideProducers(ms.producerFor)
	stopTriggers, err := startInProcessTriggers(ctx, hc)
	if err != nil {
		stopTriggers()
		stopContext(hc, 0)
		return []string{err.Error()}
	}

	ex := exchange.NewWithBody(exchange.InOut, exchange.DeepCopy(tc.Input.Body))
	for name, v := range tc.Input.Headers {
		ex.In().SetHeader(name, v)
	}
	start := time.Now()
	runErr, timedOut := run(ctx, hc, tc.Workflow, ex, timeout)
	var failures []string
	if timedOut {
		failures = []string{fmt.Sprintf("timed out after %v: the workflow was still running "+
			"(mock the slow target, or give the case a longer timeout:)", timeout)}
	} else {
		failures = checkOutcome(tc.Expect, ex, runErr)
	}
	// Stopped before the mocks are checked: stopping waits for the background work
	// of wiretap steps, whose calls the mocks count too.
	stopTriggers()
	stopContext(hc, timeout-time.Since(start))
	return append(failures, ms.checkAll()...)
}

// run sends ex through the workflow with a deadline. A tool is called through
// tool://id, so its arguments are validated as an MCP call's would be. timedOut:
// the workflow was still running at the deadline (ex may still be in use then).
func run(ctx context.Context, hc *engine.Context, id string, ex *exchange.Exchange, timeout time.Duration) (err error, timedOut bool) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		if w, ok := hc.Workflow(id); ok && w.Kind == engine.KindTool {
			done <- hc.Send(rctx, "tool://"+id, ex)
			return
		}
		done <- hc.Run(rctx, id, ex)
	}()
	select {
	case err = <-done:
	case <-rctx.Done():
		select {
		case err = <-done:
		case <-time.After(abandonGrace):
			return nil, true
		}
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return err, true
	}
	return err, false
}

// startInProcessTriggers starts the consumers of the workflows triggered by
// direct://, tool:// and agent://; the function returned stops them.
func startInProcessTriggers(ctx context.Context, hc *engine.Context) (func(), error) {
	var started []component.Consumer
	stop := func() {
		for i := len(started) - 1; i >= 0; i-- {
			_ = started[i].Stop(context.WithoutCancel(ctx))
		}
	}
	for _, w := range hc.Workflows() {
		u, err := uri.Parse(w.FromURI)
		if w.FromURI == "" || err != nil || !slices.Contains(inProcessTriggers, u.Scheme) {
			continue
		}
		id := w.ID
		ep, err := hc.Endpoint(w.FromURI)
		if err != nil {
			return stop, fmt.Errorf("workflow %s: trigger %w", id, err)
		}
		cons, err := ep.CreateConsumer(engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			return hc.Run(ctx, id, ex)
		}))
		if err == nil {
			err = cons.Start(ctx)
		}
		if err != nil {
			return stop, fmt.Errorf("workflow %s: trigger %s: %w", id, hc.ShownURI(w.FromURI), err)
		}
		started = append(started, cons)
	}
	return stop, nil
}

// stopContext waits up to drain (at least minDrain) for the case's background work
// (wiretaps) and stops its producers; what is still running then is cancelled.
func stopContext(hc *engine.Context, drain time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), max(drain, minDrain))
	defer cancel()
	_ = hc.Stop(ctx)
}

// minDrain is the least time background work gets to finish after the workflow
// answered, even when the case used up its timeout.
const minDrain = 100 * time.Millisecond

// checkOutcome compares the run's result with the case's expect: block.
func checkOutcome(want config.TestExpect, ex *exchange.Exchange, runErr error) []string {
	if want.HasError {
		switch {
		case runErr == nil:
			return []string{fmt.Sprintf("want an error containing %q, the workflow succeeded with body %s",
				want.Error, show(plain(ex.In().Body(), true)))}
		case !strings.Contains(runErr.Error(), want.Error):
			return []string{fmt.Sprintf("error: got %q, want it to contain %q", runErr.Error(), want.Error)}
		}
		return nil
	}
	if runErr != nil {
		return []string{"the workflow failed: " + runErr.Error()}
	}
	body := ex.In().Body()
	var out []string
	if want.HasBody {
		out = append(out, differences("body", plain(body, isData(want.Body)), plain(want.Body, true), false)...)
	}
	if want.HasBodySubset {
		out = append(out, differences("body", plain(body, true), plain(want.BodySubset, true), true)...)
	}
	text := bodyText(body)
	if want.BodyContains != "" && !strings.Contains(text, want.BodyContains) {
		out = append(out, fmt.Sprintf("body does not contain %q", want.BodyContains))
	}
	if want.BodyMatches != nil && !want.BodyMatches.MatchString(text) {
		out = append(out, fmt.Sprintf("body does not match %s", want.BodyMatches))
	}
	if len(out) > 0 {
		out = append(out, "got body: "+text)
	}
	return append(out, checkHeaders(want.Headers, ex.In())...)
}

func checkHeaders(want map[string]any, msg *exchange.Message) []string {
	var out []string
	for _, name := range sortedKeys(want) {
		w := exchange.Stringify(want[name])
		got := msg.Header(name)
		switch {
		case got == nil:
			out = append(out, fmt.Sprintf("header %s: missing, want %q", name, w))
		case exchange.Stringify(got) != w:
			out = append(out, fmt.Sprintf("header %s: got %q, want %q", name, exchange.Stringify(got), w))
		}
	}
	return out
}

// checkAll returns the unmet expectations of every mock.
func (ms mocks) checkAll() []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.check()...)
	}
	return out
}
