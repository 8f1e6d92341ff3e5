package step_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

var waitSecret = []byte("0123456789abcdef0123456789abcdef")

// waitsApp starts testdata/waits/waits.yaml with a wait service whose callback
// route is served by an httptest server; the callback URLs the notify: steps
// send arrive on the returned channel.
func waitsApp(t *testing.T) (*engine.Context, <-chan string) {
	t.Helper()
	urls := make(chan string, 4)
	notify := engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
		u := ex.In().HeaderString(step.HeaderApprovalURL) + ex.In().HeaderString(step.HeaderAwaitURL)
		urls <- u
		return nil
	})
	hc, _ := patternApp(t, "waits.yaml", map[string]engine.Processor{"direct://notify": notify})
	var w *durable.Waits
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { w.CallbackHandler().ServeHTTP(rw, r) }))
	t.Cleanup(srv.Close) // before the app's leak check, which runs after
	var err error
	w, err = durable.NewWaits(durable.WaitsOptions{Secret: waitSecret, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	durable.AttachWaits(hc, w) // the steps look it up when they run
	t.Cleanup(func() { durable.AttachWaits(hc, nil) })
	return hc, urls
}

func postTo(t *testing.T, url, ct, body string) int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Post(url, ct, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestApproveInMemoryByCallback(t *testing.T) {
	hc, urls := waitsApp(t)
	type result struct {
		ex  *exchange.Exchange
		err error
	}
	done := make(chan result, 1)
	go func() { ex, err := call(t, hc, "approve", map[string]any{"id": 7}); done <- result{ex, err} }()
	url := <-urls
	if !strings.Contains(url, durable.CallbackPath) {
		t.Fatalf("callback URL %q", url)
	}
	if code := postTo(t, url+"?decision=approve", "", ""); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	in := res.ex.In()
	if in.HeaderString(step.HeaderApproval) != "approved" || in.HeaderString("Done") != "yes" || in.HeaderString(step.HeaderApprovalBy) != "callback link" {
		t.Errorf("headers %v", in.Headers())
	}
	if code := postTo(t, url+"?decision=approve", "", ""); code != 410 {
		t.Errorf("the link a second time: %d, want 410", code)
	}

	// A rejection fails the step, saying so.
	go func() { ex, err := call(t, hc, "approve", map[string]any{"id": 8}); done <- result{ex, err} }()
	url = <-urls
	if code := postTo(t, url, "application/json", `{"decision":"reject"}`); code != 200 {
		t.Fatalf("reject: %d", code)
	}
	if res := <-done; res.err == nil || !strings.Contains(res.err.Error(), "rejected by callback link") {
		t.Errorf("rejected run: %v", res.err)
	}
}

func TestApproveInMemoryTimeout(t *testing.T) {
	hc, _ := waitsApp(t)
	ex, err := call(t, hc, "approve-timeout", "x")
	if err != nil || ex.In().HeaderString(step.HeaderApproval) != "timeout" {
		t.Errorf("on_timeout continue: %v, headers %v", err, ex.In().Headers())
	}
	if _, err := call(t, hc, "approve-timeout-fails", "x"); err == nil || !strings.Contains(err.Error(), "nobody answered within 30ms") {
		t.Errorf("timeout: %v", err)
	}
}

func TestAwaitHTTPInMemory(t *testing.T) {
	hc, urls := waitsApp(t)
	type result struct {
		ex  *exchange.Exchange
		err error
	}
	done := make(chan result, 1)
	go func() { ex, err := call(t, hc, "await-http", "order"); done <- result{ex, err} }()
	url := <-urls
	if code := postTo(t, url, "application/json", `{"paid": true, "amount": 12}`); code != 200 {
		t.Fatalf("callback: %d", code)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	jsonEqual(t, "variable paid", res.ex.Variable("paid"), map[string]any{"paid": true, "amount": 12})
	if res.ex.In().Body() != "order" || res.ex.In().HeaderString(step.HeaderAwait) != "received" {
		t.Errorf("body %v headers %v", res.ex.In().Body(), res.ex.In().Headers())
	}
}

func TestSleepAndUntilInMemory(t *testing.T) {
	hc, _ := waitsApp(t)
	start := time.Now()
	if _, err := call(t, hc, "sleep", nil); err != nil || time.Since(start) < 30*time.Millisecond {
		t.Errorf("sleep: %v after %s", err, time.Since(start))
	}
	// A cancelled run stops sleeping, failing.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := hc.Run(ctx, "until", exchange.NewWithBody(exchange.InOut, map[string]any{"at": time.Now().Add(time.Hour).Format(time.RFC3339)}))
	if err == nil || !strings.Contains(err.Error(), "until: stopped before") {
		t.Errorf("cancelled until: %v", err)
	}
	if _, err := call(t, hc, "until", map[string]any{"at": "2001-01-01T00:00:00Z"}); err != nil {
		t.Errorf("a time that passed: %v", err)
	}
	if _, err := call(t, hc, "until", map[string]any{"at": "next tuesday"}); err == nil || !strings.Contains(err.Error(), `"next tuesday" is no time`) {
		t.Errorf("no time: %v", err)
	}
}

// buildStep builds one step from YAML in a bare engine context.
func buildStep(t *testing.T, hc *engine.Context, src string) engine.Processor {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := config.NewDecoder("w.yaml")
	bc := step.NewBuildContext(hc)
	ps := step.BuildSteps(bc, d.Steps(doc.Content[0], "steps"))
	if errs := append(d.Errors(), bc.Errors()...); len(errs) > 0 || len(ps) != 1 {
		t.Fatalf("%s: %v", src, errs)
	}
	return ps[0]
}

func parkOf(t *testing.T, err error) durable.Wait {
	t.Helper()
	var pe *durable.ParkError
	if !errors.As(err, &pe) {
		t.Fatalf("want the run parked, got %v", err)
	}
	if !engine.IsInterrupt(err) {
		t.Error("a park is no interrupt: an error handler would see it")
	}
	return pe.Wait
}

// In a durable run a waiting step parks (it holds nothing), and when it runs
// again with the resolution it applies it.
func TestWaitingStepsParkInADurableRun(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("durable-waits")
	w, err := durable.NewWaits(durable.WaitsOptions{Secret: waitSecret, BaseURL: "https://helix.example"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	durable.AttachWaits(hc, w)
	defer durable.AttachWaits(hc, nil)
	ctx := durable.WithDurable(context.Background(), "run-9")
	resolved := func(r durable.Resolution) context.Context { return durable.WithResolution(ctx, r) }

	notified := make(chan string, 1)
	hc.AddComponent("capture", captureComponent(func(ex *exchange.Exchange) { notified <- ex.In().Body().(string) }))
	approve := buildStep(t, hc, `- approve: {message: "Pay ${body.n}?", id: pay, timeout: 1h, on_reject: continue,
    notify: [{set-body: {constant: "Approve: ${header.HelixApprovalUrl}"}}, {target: "capture://chat"}]}`)
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"n": 3})
	before := time.Now()
	wt := parkOf(t, approve.Process(ctx, ex))
	if wt.Kind != durable.WaitApprove || wt.Key != "pay" || wt.Message != "Pay 3?" || wt.Due.Before(before.Add(time.Hour)) || wt.Due.After(time.Now().Add(time.Hour)) {
		t.Errorf("wait %+v", wt)
	}
	if got, want := <-notified, "Approve: "+w.URL("run-9", wt); got != want || !strings.HasPrefix(want, "Approve: https://helix.example/helix/callbacks/") {
		t.Errorf("notify sent %q, want %q", got, want)
	}
	jsonEqual(t, "the run's body after notify", ex.In().Body(), map[string]any{"n": 3})
	ex = exchange.NewWithBody(exchange.InOut, "b")
	if err := approve.Process(resolved(durable.Resolution{Kind: durable.ResolvedRejected, By: "ops"}), ex); err != nil || ex.In().HeaderString(step.HeaderApproval) != "rejected" || ex.In().HeaderString(step.HeaderApprovalBy) != "ops" {
		t.Errorf("rejected, on_reject continue: %v %v", err, ex.In().Headers())
	}
	if err := approve.Process(resolved(durable.Resolution{Kind: durable.ResolvedTimeout}), ex); err == nil || !strings.Contains(err.Error(), "nobody answered within 1h0m0s") {
		t.Errorf("timeout: %v", err)
	}
	if err := approve.Process(resolved(durable.Resolution{Kind: durable.ResolvedApproved}), ex); err != nil {
		t.Errorf("approved: %v", err)
	}

	sleep := buildStep(t, hc, "- sleep: 2h")
	if wt := parkOf(t, sleep.Process(ctx, ex)); wt.Kind != durable.WaitSleep || time.Until(wt.Due) < 119*time.Minute {
		t.Errorf("sleep wait %+v", wt)
	}
	if err := sleep.Process(resolved(durable.Resolution{Kind: durable.ResolvedTimeout}), ex); err != nil {
		t.Errorf("sleep after its timer: %v", err)
	}

	until := buildStep(t, hc, `- until: {starlang: 'payload["at"]'}`)
	at := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	ex = exchange.NewWithBody(exchange.InOut, map[string]any{"at": at.Unix()})
	if wt := parkOf(t, until.Process(ctx, ex)); wt.Kind != durable.WaitSleep || !wt.Due.Equal(at) {
		t.Errorf("until wait %+v, want due %s", wt, at)
	}
	ex = exchange.NewWithBody(exchange.InOut, map[string]any{"at": 1000})
	if err := until.Process(ctx, ex); err != nil {
		t.Errorf("until a time that passed parks nothing: %v", err)
	}

	await := buildStep(t, hc, `- await: {id: cb, timeout: 5m, on_timeout: continue}`)
	wt = parkOf(t, await.Process(ctx, ex))
	if wt.Kind != durable.WaitAwait || wt.Key != "cb" || wt.Source != "" {
		t.Errorf("await wait %+v", wt)
	}
	ex = exchange.NewWithBody(exchange.InOut, "old")
	data := durable.ReceivedData([]byte(`{"ok":true}`), "application/json")
	if err := await.Process(resolved(durable.Resolution{Kind: durable.ResolvedReceived, Data: data}), ex); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "body", ex.In().Body(), map[string]any{"ok": true})
	if err := await.Process(resolved(durable.Resolution{Kind: durable.ResolvedTimeout}), ex); err != nil || ex.In().HeaderString(step.HeaderAwait) != "timeout" {
		t.Errorf("await timeout, on_timeout continue: %v", err)
	}
}

func TestElicitParksInADurableRun(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("durable-elicit")
	ctx := durable.WithDurable(context.Background(), "run-e")
	elicit := buildStep(t, hc, `- elicit: {message: "Name for ${body.id}?", id: who, timeout: 1h,
    schema: {properties: {name: {type: string, minLength: 2}, vip: {type: boolean, default: false}}, required: [name]}}`)
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"id": "o-1"})
	wt := parkOf(t, elicit.Process(ctx, ex))
	if wt.Kind != durable.WaitElicit || wt.Key != "who" || wt.Message != "Name for o-1?" || wt.Due.IsZero() {
		t.Errorf("wait %+v", wt)
	}
	var schema map[string]any
	if err := json.Unmarshal(wt.Schema, &schema); err != nil || schema["required"] == nil {
		t.Errorf("schema %s: %v", wt.Schema, err)
	}
	answer := func(kind, data string) (*exchange.Exchange, error) {
		ex := exchange.NewWithBody(exchange.InOut, "b")
		r := durable.Resolution{Kind: kind}
		if data != "" {
			r.Data = json.RawMessage(data)
		}
		return ex, elicit.Process(durable.WithResolution(ctx, r), ex)
	}
	ex, err := answer(durable.ResolvedAnswered, `{"name":"Ada"}`)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "answer with its default", ex.In().Body(), map[string]any{"name": "Ada", "vip": false})
	if ex.In().HeaderString(step.HeaderElicitAction) != "accept" {
		t.Errorf("headers %v", ex.In().Headers())
	}
	if _, err := answer(durable.ResolvedAnswered, `{"name":"A"}`); err == nil || !strings.Contains(err.Error(), "does not match the form") {
		t.Errorf("an answer the form refuses: %v", err)
	}
	if _, err := answer(durable.ResolvedDeclined, ""); err == nil || !strings.Contains(err.Error(), "declined") {
		t.Errorf("declined: %v", err)
	}
	if _, err := answer(durable.ResolvedTimeout, ""); err == nil || !strings.Contains(err.Error(), "nobody answered") {
		t.Errorf("timeout: %v", err)
	}
}

func TestWaitingStepBuildErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{"- approve: {message: hi, timeout: -1s}", "ask.yaml:1:35: steps[0].timeout"},
		{"- approve: {timeout: 1s}", "message"},
		{"- approve: {message: hi, on_reject: shrug}", "on_reject"},
		{"- approve: {message: hi, notify: [{bogus: 1}]}", `unknown step "bogus"`},
		{"- sleep: 0s", "positive duration"},
		{"- sleep: soon", "ask.yaml:1:10"},
		{"- until: {}", "needs at:"},
		{"- until: {at: x, starlang: '1'}", "keep one"},
		{"- await: {key: '${body.id}'}", "correlate records of from:"},
		{"- await: {from: 'direct://x'}", "needs key:"},
		{"- await: {into: ''}", "must not be empty"},
		{"- await: {timeout: 0s}", "positive duration"},
	} {
		if got := buildErrors(t, c.src); !strings.Contains(got, c.want) {
			t.Errorf("%s\nerrors:\n%s\nwant %q", c.src, got, c.want)
		}
	}
	for _, ok := range []string{
		`- approve: "Sure?"`,
		"- sleep: {for: 1h}",
		`- until: "${body.at}"`,
		"- await: {}",
		"- await: {from: 'direct://results', key: '${body.id}', match: '${body.ref}', timeout: 1m, into: result}",
	} {
		if got := buildErrors(t, ok); got != "" {
			t.Errorf("%s: unexpected errors:\n%s", ok, got)
		}
	}
}

// captureComponent is a producer-only component that hands each exchange to f.
type captureComponent func(*exchange.Exchange)

func (c captureComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	return captureEndpoint{c}, nil
}

type captureEndpoint struct{ f captureComponent }

func (e captureEndpoint) URI() string { return "capture://" }
func (e captureEndpoint) CreateProducer() (component.Producer, error) {
	return captureProducer(e), nil
}
func (e captureEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type captureProducer captureEndpoint

func (p captureProducer) Process(_ context.Context, ex *exchange.Exchange) error { p.f(ex); return nil }
func (p captureProducer) Start(context.Context) error                            { return nil }
func (p captureProducer) Stop(context.Context) error                             { return nil }

// fakeAsker answers elicitations as told: with an answer, an error, or not
// until ctx ends.
type fakeAsker struct {
	ask.Client
	answer *ask.ElicitAnswer
	err    error
	asked  chan *ask.Elicitation
	ended  chan struct{} // closed when an unanswered question is withdrawn
}

func (f *fakeAsker) Elicit(ctx context.Context, q *ask.Elicitation) (*ask.ElicitAnswer, error) {
	if f.asked != nil {
		f.asked <- q
	}
	if f.answer == nil && f.err == nil {
		<-ctx.Done()
		if f.ended != nil {
			close(f.ended)
		}
		return nil, ctx.Err()
	}
	return f.answer, f.err
}

// In a run that is not durable, approve: asks the calling MCP client's user
// (accept approves, decline rejects) beside its callback link, and an MCP
// 2026-07-28 client's "answer by calling again" stops the run as elicit: does.
func TestApproveInMemoryByMCPClient(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("approve-mcp")
	w, err := durable.NewWaits(durable.WaitsOptions{Secret: waitSecret, BaseURL: "http://helix.test"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	approve := buildStep(t, hc, `- approve: {message: "Go?", id: go, on_reject: continue}`)
	run := func(c ask.Client) (*exchange.Exchange, error) {
		ex := exchange.NewWithBody(exchange.InOut, "b")
		ctx, cancel := context.WithTimeout(ask.WithClient(context.Background(), c), 30*time.Second)
		defer cancel()
		return ex, approve.Process(ctx, ex)
	}
	// Without a wait service: the client alone.
	asked := make(chan *ask.Elicitation, 1)
	ex, err := run(&fakeAsker{answer: &ask.ElicitAnswer{Action: ask.ActionAccept}, asked: asked})
	if q := <-asked; err != nil || ex.In().HeaderString(step.HeaderApproval) != "approved" || ex.In().HeaderString(step.HeaderApprovalBy) != "mcp client" || q.ID != "go" || q.Message != "Go?" {
		t.Errorf("accept: %v %v %+v", err, ex.In().Headers(), q)
	}
	durable.AttachWaits(hc, w)
	defer durable.AttachWaits(hc, nil)
	if ex, err := run(&fakeAsker{answer: &ask.ElicitAnswer{Action: ask.ActionDecline}}); err != nil || ex.In().HeaderString(step.HeaderApproval) != "rejected" {
		t.Errorf("decline: %v %v", err, ex.In().Headers())
	}
	if _, err := run(&fakeAsker{err: ask.ErrInputRequired}); !errors.Is(err, ask.ErrInputRequired) {
		t.Errorf("an MCP 2026-07-28 client: %v, want the input-required interrupt", err)
	}
	// The link answers first: the question to the client is withdrawn.
	links := make(chan string, 1)
	hc.AddComponent("capture", captureComponent(func(ex *exchange.Exchange) { links <- ex.In().HeaderString(step.HeaderApprovalURL) }))
	approve = buildStep(t, hc, `- approve: {message: "Go?", notify: [{target: "capture://x"}]}`)
	asker := &fakeAsker{asked: make(chan *ask.Elicitation, 1), ended: make(chan struct{})}
	done := make(chan error, 1)
	ex = exchange.NewWithBody(exchange.InOut, "b")
	go func() {
		ctx, cancel := context.WithTimeout(ask.WithClient(context.Background(), asker), 30*time.Second)
		defer cancel()
		done <- approve.Process(ctx, ex)
	}()
	link := <-links
	<-asker.asked
	if _, err := w.ResolveToken(context.Background(), link[strings.LastIndex(link, "/")+1:], durable.Resolution{Kind: durable.ResolvedApproved, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || ex.In().HeaderString(step.HeaderApprovalBy) != "ops" {
		t.Errorf("by link: %v %v", err, ex.In().Headers())
	}
	<-asker.ended // the question to the client was withdrawn (else the test's deadline)
}
