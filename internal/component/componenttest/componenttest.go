// Package componenttest is the conformance suite every Helix component runs.
//
// A component's test describes the component once, in a [Harness], and calls [Run]:
//
//	func TestConformance(t *testing.T) {
//		componenttest.Run(t, componenttest.Harness{
//			Features: componenttest.Features{Producer: true, Consumer: true, RequestReply: true, Headers: true},
//			Setup: func(t *testing.T) *componenttest.Fixture { … },
//		})
//	}
//
// The suite drives the component only through the contracts of package component
// (CreateEndpoint, CreateProducer, CreateConsumer, Start, Stop, Process) plus the two
// "outside world" hooks of the [Fixture]: Send (something outside delivers a message to
// the consumer, for example an HTTP client or a file dropped in a directory) and Listen
// (something outside receives what the producer sends, for example an httptest server).
// [Features] switches off what does not apply: a producer-only component such as log://
// skips every consumer test, a self-triggering consumer such as timer:// skips Send.
// A consumer that runs other workflows of its engine context instead of the processor
// it was created with (mcp-server:// serves the context's workflows as MCP tools) sets
// [Features.ExternalProcessor]; its fixture routes what Send delivers to the suite's
// processor through [Fixture.Bind].
//
// Every subtest checks with goleak that no goroutine it started outlives it, so a
// consumer whose Stop returns before its goroutines end fails here. Subtests do not run
// in parallel (goleak needs a quiet process); [Features.Stress] adds subtests that are
// parallel inside (many concurrent exchanges through several fixtures, every message
// checked to arrive exactly once), as Watermill's pub/sub suite has.
package componenttest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// BlockBody is the body of a message that the outside-world peer of a producer test
// must hold on to until its context (the request's context) is cancelled. The
// context-cancellation test sends it.
const BlockBody = "componenttest:block"

// ReplyPrefix is what a request/reply peer puts in front of the received body when it
// answers; the suite's own consumer processor does the same.
const ReplyPrefix = "reply:"

// Header names the suite uses to check that headers travel.
const (
	// TestHeader is set on outgoing messages; the receiving side must see it unchanged.
	TestHeader = "X-Conformance-Test"
	// ReplyHeader is set on replies ("yes"); the requesting side must see it.
	ReplyHeader = "X-Conformance-Reply"
)

// Timeout bounds every wait of the suite. It is generous on purpose: the suite checks
// behaviour, never speed, and must not flake on a loaded machine (30 s did, for the
// PostgreSQL consumer's stress pairs at a load average of 26 on two cores).
const Timeout = testtools.StartupBound

// Features says what a component supports; the suite runs the tests that apply.
type Features struct {
	// Producer and Consumer give the component's direction. A component that is only
	// one of them must refuse the other with component.ErrConsumerOnly /
	// component.ErrProducerOnly, which the suite checks.
	Producer bool
	Consumer bool

	// RequestReply: a consumer's reply (the body after its processor) reaches the
	// outside sender, and a producer's InOut exchange carries the peer's reply.
	RequestReply bool
	// Headers: message headers travel both ways (and reply headers come back when
	// RequestReply is set).
	Headers bool

	// SelfTriggering consumers create exchanges on their own (timer://); Send is not used.
	SelfTriggering bool
	// Pattern is the pattern of the exchanges a consumer creates. PassThrough means the
	// consumer hands over the sender's exchange as is (direct://).
	Pattern     exchange.Pattern
	PassThrough bool

	// ProducerCancel: cancelling the context of Process aborts a producer's send that
	// waits for its peer (the peer honours BlockBody).
	ProducerCancel bool
	// ConsumerCancel: when the outside sender gives up (its context is cancelled), the
	// context the consumer handed to its processor is cancelled.
	ConsumerCancel bool
	// StopDrains: a consumer's Stop waits for the exchanges it is processing.
	// direct:// does not: its exchanges run on the sender's goroutine and the engine
	// drains them.
	StopDrains bool
	// ConcurrentConsumer: the consumer processes several messages at the same time
	// (one goroutine per request), so the suite can send many in parallel.
	ConcurrentConsumer bool

	// Stress runs the stress subtests (Stress/Producer, Stress/Consumer; see
	// stress.go): many concurrent exchanges through several fixtures at once, each
	// message checked to arrive exactly once at its own pair. The size is
	// DefaultStressMessages per pair unless -componenttest.stress or HELIX_STRESS
	// sets it.
	Stress bool

	// ExternalProcessor: the consumer does not call the processor handed to
	// CreateConsumer; what arrives runs other workflows of the consumer's engine
	// context (mcp-server:// exposes them as tools). Before each CreateConsumer the
	// suite hands its processor to Fixture.Bind, and the fixture wires it as the work
	// done by the workflow that Send reaches. Every consumer test still goes through
	// the real consumer: Send must reach that workflow through it.
	ExternalProcessor bool
}

// Message is what the outside world sends or receives, in text form.
type Message struct {
	Body    string
	Headers map[string]string
}

// Fixture is one isolated instance of the component under test, built per subtest.
type Fixture struct {
	// Component is a fresh component.
	Component component.Component
	// URI is the endpoint under test, unique to this fixture.
	URI string
	// Send makes the outside world deliver msg to the consumer of URI and returns the
	// reply the outside world sees (zero Message when the component has no replies).
	// The suite calls it only after the consumer started. Required for consumers that
	// are not SelfTriggering.
	Send func(ctx context.Context, msg Message) (Message, error)
	// Listen starts the outside-world receiver of producer tests and returns the channel
	// on which it reports every message the producer delivered. A request/reply peer
	// answers each with body ReplyPrefix+body and header ReplyHeader: "yes"; when the
	// body is BlockBody it reports it and then holds it until its context is cancelled.
	// Required for producers.
	Listen func() <-chan Message
	// Prepare, when set, is applied to every exchange the suite sends through the
	// producer, for components that address each message (file:// sets HelixFileName).
	Prepare func(ex *exchange.Exchange)
	// Bind, required with Features.ExternalProcessor, makes p the processor that the
	// messages Send delivers reach (for mcp-server://, a step of the workflow exposed as
	// the tool Send calls). The suite calls it before each CreateConsumer with the
	// processor it then hands to CreateConsumer.
	Bind func(p component.Processor)
}

// newExchange builds an exchange for a producer test.
func (fx *Fixture) newExchange(p exchange.Pattern, body string) *exchange.Exchange {
	ex := exchange.NewWithBody(p, body)
	if fx.Prepare != nil {
		fx.Prepare(ex)
	}
	return ex
}

// Harness describes a component to [Run].
type Harness struct {
	Features Features
	// Setup builds a fresh fixture; it registers its cleanups with t.Cleanup.
	Setup func(t *testing.T) *Fixture
}

// Run runs the conformance suite for h as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Setup == nil {
		t.Fatal("componenttest: Harness.Setup is required")
	}
	f := h.Features
	tests := []struct {
		name string
		run  func(t *testing.T, h Harness, fx *Fixture)
		when bool
	}{
		{"Direction", testDirection, true},
		{"Endpoint/URI", testEndpointURI, true},
		{"Producer/StartStop", testProducerStartStop, f.Producer},
		{"Producer/Send", testProducerSend, f.Producer},
		{"Producer/Headers", testProducerHeaders, f.Producer && f.Headers},
		{"Producer/RequestReply", testProducerRequestReply, f.Producer && f.RequestReply},
		{"Producer/ContextCancel", testProducerCancel, f.Producer && f.ProducerCancel},
		{"Producer/Concurrent", testProducerConcurrent, f.Producer},
		{"Consumer/StartStop", testConsumerStartStop, f.Consumer},
		{"Consumer/Receive", testConsumerReceive, f.Consumer},
		{"Consumer/Headers", testConsumerHeaders, f.Consumer && f.Headers && !f.SelfTriggering},
		{"Consumer/ReservedHeaders", testConsumerReservedHeaders, f.Consumer && f.Headers && !f.SelfTriggering && !f.PassThrough},
		{"Consumer/RequestReply", testConsumerRequestReply, f.Consumer && f.RequestReply && !f.SelfTriggering},
		{"Consumer/ContextCancel", testConsumerCancel, f.Consumer && f.ConsumerCancel && !f.SelfTriggering},
		{"Consumer/StopDrainsInFlight", testConsumerStopDrains, f.Consumer && f.StopDrains},
		{"Consumer/NothingAfterStop", testConsumerNothingAfterStop, f.Consumer},
		{"Consumer/Concurrent", testConsumerConcurrent, f.Consumer && f.ConcurrentConsumer && !f.SelfTriggering},
		{"Stress/Producer", testStressProducer, f.Stress && f.Producer},
		{"Stress/Consumer", testStressConsumer, f.Stress && f.Consumer && !f.SelfTriggering},
	}
	for _, tc := range tests {
		if !tc.when {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			// Registered first so it runs last, after the fixture's own cleanups closed
			// servers and directories: only goroutines this subtest leaked remain.
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			fx := h.Setup(t)
			if fx == nil || fx.Component == nil || fx.URI == "" {
				t.Fatal("componenttest: Setup must return a fixture with Component and URI")
			}
			tc.run(t, h, fx)
		})
	}
}

func endpoint(t *testing.T, fx *Fixture) component.Endpoint {
	t.Helper()
	u, err := uri.Parse(fx.URI)
	if err != nil {
		t.Fatalf("parse %s: %v", fx.URI, err)
	}
	ep, err := fx.Component.CreateEndpoint(u)
	if err != nil {
		t.Fatalf("CreateEndpoint(%s): %v", fx.URI, err)
	}
	return ep
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// startProducer creates and starts a producer and stops it at cleanup.
func startProducer(t *testing.T, fx *Fixture) component.Producer {
	t.Helper()
	p, err := endpoint(t, fx).CreateProducer()
	if err != nil {
		t.Fatalf("CreateProducer: %v", err)
	}
	if err := p.Start(testCtx(t)); err != nil {
		t.Fatalf("producer Start: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(testCtx(t)); err != nil {
			t.Errorf("producer Stop: %v", err)
		}
	})
	return p
}

func listen(t *testing.T, fx *Fixture) <-chan Message {
	t.Helper()
	if fx.Listen == nil {
		t.Fatal("componenttest: Fixture.Listen is required for producers")
	}
	return fx.Listen()
}

func recv(t *testing.T, ch <-chan Message, what string) Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(Timeout):
		t.Fatalf("%s: nothing arrived within %s", what, Timeout)
		return Message{}
	}
}

func testDirection(t *testing.T, h Harness, fx *Fixture) {
	ep := endpoint(t, fx)
	if !h.Features.Producer {
		p, err := ep.CreateProducer()
		if !errors.Is(err, component.ErrConsumerOnly) {
			t.Fatalf("CreateProducer of a consumer-only component: got (%v, %v), want component.ErrConsumerOnly", p, err)
		}
	}
	if !h.Features.Consumer {
		c, err := ep.CreateConsumer(component.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil }))
		if !errors.Is(err, component.ErrProducerOnly) {
			t.Fatalf("CreateConsumer of a producer-only component: got (%v, %v), want component.ErrProducerOnly", c, err)
		}
	}
}

func testEndpointURI(t *testing.T, _ Harness, fx *Fixture) {
	if got := endpoint(t, fx).URI(); got == "" {
		t.Fatal("Endpoint.URI() is empty; it names the endpoint in errors and logs")
	}
}

func testProducerStartStop(t *testing.T, _ Harness, fx *Fixture) {
	p, err := endpoint(t, fx).CreateProducer()
	if err != nil {
		t.Fatalf("CreateProducer: %v", err)
	}
	if err := p.Start(testCtx(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := p.Stop(testCtx(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func testProducerSend(t *testing.T, _ Harness, fx *Fixture) {
	got := listen(t, fx)
	p := startProducer(t, fx)
	ex := fx.newExchange(exchange.InOnly, "hello conformance")
	if err := p.Process(testCtx(t), ex); err != nil {
		t.Fatalf("Process: %v", err)
	}
	if m := recv(t, got, "producer send"); m.Body != "hello conformance" {
		t.Fatalf("peer received body %q, want %q", m.Body, "hello conformance")
	}
}

func testProducerHeaders(t *testing.T, h Harness, fx *Fixture) {
	got := listen(t, fx)
	p := startProducer(t, fx)
	pattern := exchange.InOnly
	if h.Features.RequestReply {
		pattern = exchange.InOut
	}
	ex := fx.newExchange(pattern, "with headers")
	ex.In().SetHeader(TestHeader, "v1")
	if err := p.Process(testCtx(t), ex); err != nil {
		t.Fatalf("Process: %v", err)
	}
	m := recv(t, got, "producer headers")
	if m.Headers[TestHeader] != "v1" {
		t.Fatalf("peer received headers %v, want %s=v1", m.Headers, TestHeader)
	}
	if h.Features.RequestReply {
		if r := ex.In().HeaderString(ReplyHeader); r != "yes" {
			t.Fatalf("after the reply, exchange header %s=%q, want \"yes\" (headers: %v)", ReplyHeader, r, ex.In().Headers())
		}
	}
}

func testProducerRequestReply(t *testing.T, _ Harness, fx *Fixture) {
	got := listen(t, fx)
	p := startProducer(t, fx)
	ex := fx.newExchange(exchange.InOut, "ping")
	if err := p.Process(testCtx(t), ex); err != nil {
		t.Fatalf("Process: %v", err)
	}
	recv(t, got, "producer request")
	if b := exchange.Stringify(ex.In().Body()); b != ReplyPrefix+"ping" {
		t.Fatalf("reply body %q, want %q", b, ReplyPrefix+"ping")
	}
}

func testProducerCancel(t *testing.T, _ Harness, fx *Fixture) {
	got := listen(t, fx)
	p := startProducer(t, fx)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- p.Process(ctx, fx.newExchange(exchange.InOut, BlockBody)) }()
	recv(t, got, "blocking request")
	cancel()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Process returned nil after its context was cancelled mid-send; want an error")
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Process error %q does not wrap context.Canceled", err)
		}
	case <-time.After(Timeout):
		t.Fatalf("Process did not return within %s after its context was cancelled", Timeout)
	}
}

func testProducerConcurrent(t *testing.T, h Harness, fx *Fixture) {
	got := listen(t, fx)
	p := startProducer(t, fx)
	const workers, each = 8, 5
	pattern := exchange.InOnly
	if h.Features.RequestReply {
		pattern = exchange.InOut
	}
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf("msg-%d-%d", w, i)
				ex := fx.newExchange(pattern, body)
				if err := p.Process(ctx, ex); err != nil {
					errs <- fmt.Errorf("send %s: %w", body, err)
					continue
				}
				if h.Features.RequestReply {
					if r := exchange.Stringify(ex.In().Body()); r != ReplyPrefix+body {
						errs <- fmt.Errorf("send %s: reply %q belongs to another request", body, r)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var bodies []string
	for range workers * each {
		bodies = append(bodies, recv(t, got, "concurrent send").Body)
	}
	sort.Strings(bodies)
	for i := 1; i < len(bodies); i++ {
		if bodies[i] == bodies[i-1] {
			t.Fatalf("peer received %q twice", bodies[i])
		}
	}
}

// recorder is the suite's processor for consumer tests: it records what arrives,
// replies with ReplyPrefix+body and ReplyHeader, and holds BlockBody messages (or any
// message while hold is set) until released or cancelled.
type recorder struct {
	got      chan received
	release  chan struct{}
	hold     bool
	mu       sync.Mutex
	stopped  bool // set once Stop returned; a later delivery is a bug
	late     []string
	canceled chan struct{} // closed when a blocked processor saw its context end
	once     sync.Once
}

type received struct {
	body    string
	headers map[string]string
	pattern exchange.Pattern
	ex      *exchange.Exchange
}

func newRecorder() *recorder {
	return &recorder{got: make(chan received, 256), release: make(chan struct{}), canceled: make(chan struct{})}
}

func (r *recorder) Process(ctx context.Context, ex *exchange.Exchange) error {
	r.mu.Lock()
	if r.stopped {
		r.late = append(r.late, exchange.Stringify(ex.In().Body()))
	}
	hold := r.hold
	r.mu.Unlock()
	body := exchange.Stringify(ex.In().Body())
	hdrs := map[string]string{}
	for k, v := range ex.In().Headers() {
		hdrs[k] = exchange.Stringify(v)
	}
	r.got <- received{body: body, headers: hdrs, pattern: ex.Pattern(), ex: ex}
	if hold || body == BlockBody {
		select {
		case <-r.release:
		case <-ctx.Done():
			r.once.Do(func() { close(r.canceled) })
			return ctx.Err()
		case <-time.After(Timeout):
			return errors.New("componenttest: held message was never released")
		}
	}
	ex.In().SetBody(ReplyPrefix + body)
	ex.In().SetHeader(ReplyHeader, "yes")
	return nil
}

func (r *recorder) next(t *testing.T, what string) received {
	t.Helper()
	select {
	case m := <-r.got:
		return m
	case <-time.After(Timeout):
		t.Fatalf("%s: the consumer delivered nothing within %s", what, Timeout)
		return received{}
	}
}

// createConsumer creates a consumer with processor p, first routing the outside
// world's messages to p when the consumer runs workflows of its context.
func createConsumer(t *testing.T, h Harness, fx *Fixture, p component.Processor) component.Consumer {
	t.Helper()
	if h.Features.ExternalProcessor {
		if fx.Bind == nil {
			t.Fatal("componenttest: Fixture.Bind is required with Features.ExternalProcessor")
		}
		fx.Bind(p)
	}
	c, err := endpoint(t, fx).CreateConsumer(p)
	if err != nil {
		t.Fatalf("CreateConsumer: %v", err)
	}
	return c
}

func startConsumer(t *testing.T, h Harness, fx *Fixture, p component.Processor) component.Consumer {
	t.Helper()
	c := createConsumer(t, h, fx, p)
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatalf("consumer Start: %v", err)
	}
	return c
}

// stopConsumer stops c and fails the test on error.
func stopConsumer(t *testing.T, c component.Consumer) {
	t.Helper()
	if err := c.Stop(testCtx(t)); err != nil {
		t.Fatalf("consumer Stop: %v", err)
	}
}

func send(t *testing.T, fx *Fixture, ctx context.Context, m Message) (Message, error) {
	t.Helper()
	if fx.Send == nil {
		t.Fatal("componenttest: Fixture.Send is required for consumers that are not self-triggering")
	}
	return fx.Send(ctx, m)
}

// trigger makes one message arrive: via Send, or by waiting for a self-triggering
// consumer. Send runs in the background; its result arrives on the returned channel.
func trigger(t *testing.T, h Harness, fx *Fixture, ctx context.Context, body string) <-chan sendResult {
	out := make(chan sendResult, 1)
	if h.Features.SelfTriggering {
		out <- sendResult{}
		return out
	}
	go func() {
		m, err := fx.Send(ctx, Message{Body: body})
		out <- sendResult{m, err}
	}()
	return out
}

type sendResult struct {
	reply Message
	err   error
}

func testConsumerStartStop(t *testing.T, h Harness, fx *Fixture) {
	c := createConsumer(t, h, fx, newRecorder())
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopConsumer(t, c)
}

func testConsumerReceive(t *testing.T, h Harness, fx *Fixture) {
	rec := newRecorder()
	c := startConsumer(t, h, fx, rec)
	defer stopConsumer(t, c)
	if h.Features.SelfTriggering {
		m := rec.next(t, "self-triggered exchange")
		if m.pattern != h.Features.Pattern {
			t.Fatalf("exchange pattern %v, want %v", m.pattern, h.Features.Pattern)
		}
		return
	}
	res := trigger(t, h, fx, testCtx(t), "hello consumer")
	m := rec.next(t, "receive")
	if m.body != "hello consumer" {
		t.Fatalf("processor got body %q, want %q", m.body, "hello consumer")
	}
	// A pass-through consumer keeps whatever pattern its sender chose.
	if !h.Features.PassThrough && m.pattern != h.Features.Pattern {
		t.Fatalf("exchange pattern %v, want %v", m.pattern, h.Features.Pattern)
	}
	if r := <-res; r.err != nil {
		t.Fatalf("Send: %v", r.err)
	}
}

func testConsumerHeaders(t *testing.T, h Harness, fx *Fixture) {
	rec := newRecorder()
	c := startConsumer(t, h, fx, rec)
	defer stopConsumer(t, c)
	reply, err := send(t, fx, testCtx(t), Message{Body: "hdr", Headers: map[string]string{TestHeader: "v1"}})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if m := rec.next(t, "headers"); m.headers[TestHeader] != "v1" {
		t.Fatalf("processor got headers %v, want %s=v1", m.headers, TestHeader)
	}
	if h.Features.RequestReply && reply.Headers[ReplyHeader] != "yes" {
		t.Fatalf("reply headers %v, want %s=yes", reply.Headers, ReplyHeader)
	}
}

// testConsumerReservedHeaders: a trigger drops the headers from outside whose
// names are Helix's own (exchange.IsReservedHeader, any letter case), so that a
// sender cannot choose a file, a tool, an agent session or an endpoint; other
// headers still arrive. Pass-through consumers (direct://, tool://) are exempt:
// their sender is another workflow, whose Helix headers are meant to travel.
func testConsumerReservedHeaders(t *testing.T, h Harness, fx *Fixture) {
	rec := newRecorder()
	c := startConsumer(t, h, fx, rec)
	defer stopConsumer(t, c)
	const forged = "forged-by-the-sender"
	headers := map[string]string{TestHeader: "v1"}
	for _, name := range []string{"HelixFileName", "helixmcptoolname", "HELIXAGENTSESSIONID", "HelixHttpUri", "Helix"} {
		headers[name] = forged
	}
	if _, err := send(t, fx, testCtx(t), Message{Body: "reserved", Headers: headers}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	m := rec.next(t, "reserved headers")
	for k, v := range m.headers {
		if v == forged {
			t.Errorf("the sender's header %s=%q reached the processor", k, v)
		}
	}
	if m.headers[TestHeader] != "v1" {
		t.Errorf("processor got headers %v, want %s=v1", m.headers, TestHeader)
	}
}

func testConsumerRequestReply(t *testing.T, h Harness, fx *Fixture) {
	c := startConsumer(t, h, fx, newRecorder())
	defer stopConsumer(t, c)
	reply, err := send(t, fx, testCtx(t), Message{Body: "ping"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if reply.Body != ReplyPrefix+"ping" {
		t.Fatalf("reply body %q, want %q", reply.Body, ReplyPrefix+"ping")
	}
}

func testConsumerCancel(t *testing.T, h Harness, fx *Fixture) {
	rec := newRecorder()
	c := startConsumer(t, h, fx, rec)
	defer stopConsumer(t, c)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	res := trigger(t, h, fx, ctx, BlockBody)
	rec.next(t, "blocking message")
	cancel()
	select {
	case <-rec.canceled:
	case <-time.After(Timeout):
		t.Fatalf("the processor's context was not cancelled within %s after the sender gave up", Timeout)
	}
	if r := <-res; r.err == nil {
		t.Fatal("Send returned no error although its context was cancelled")
	}
}

func testConsumerStopDrains(t *testing.T, h Harness, fx *Fixture) {
	rec := newRecorder()
	rec.hold = true
	c := startConsumer(t, h, fx, rec)
	res := trigger(t, h, fx, testCtx(t), "in flight")
	rec.next(t, "in-flight message")

	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop(testCtx(t)) }()
	// Stop must not return while the processor still holds the exchange. Waiting a
	// little cannot make a correct component fail; it gives a wrong one the time to
	// return early.
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while an exchange was still being processed", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(rec.release)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(Timeout):
		t.Fatalf("Stop did not return within %s after the in-flight exchange finished", Timeout)
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("the in-flight sender got an error (%v); a graceful stop lets it finish", r.err)
	}
	if h.Features.RequestReply && !h.Features.SelfTriggering && r.reply.Body != ReplyPrefix+"in flight" {
		t.Fatalf("in-flight reply %q, want %q", r.reply.Body, ReplyPrefix+"in flight")
	}
}

func testConsumerNothingAfterStop(t *testing.T, h Harness, fx *Fixture) {
	rec := newRecorder()
	c := startConsumer(t, h, fx, rec)
	if h.Features.SelfTriggering {
		rec.next(t, "first exchange")
	}
	stopConsumer(t, c)
	rec.mu.Lock()
	rec.stopped = true
	rec.mu.Unlock()
	if !h.Features.SelfTriggering {
		ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
		defer cancel()
		// The send may fail (connection refused, no consumer) or be accepted and never
		// processed (a file dropped in a directory nobody polls); both are fine.
		_, _ = fx.Send(ctx, Message{Body: "after stop"})
	}
	// Give a wrongly still-running consumer the chance to deliver.
	time.Sleep(300 * time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.late) > 0 {
		t.Fatalf("the processor was called after Stop returned, with %q", rec.late)
	}
}

func testConsumerConcurrent(t *testing.T, h Harness, fx *Fixture) {
	rec := newRecorder()
	c := startConsumer(t, h, fx, rec)
	defer stopConsumer(t, c)
	const n = 16
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf("c-%d", i)
			reply, err := fx.Send(ctx, Message{Body: body})
			if err != nil {
				errs <- fmt.Errorf("send %s: %w", body, err)
				return
			}
			if h.Features.RequestReply && reply.Body != ReplyPrefix+body {
				errs <- fmt.Errorf("send %s: reply %q belongs to another request", body, reply.Body)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for range n {
		m := rec.next(t, "concurrent receive")
		if seen[m.body] {
			t.Fatalf("processor got %q twice", m.body)
		}
		seen[m.body] = true
	}
	for i := range n {
		if body := fmt.Sprintf("c-%d", i); !seen[body] {
			t.Fatalf("processor never got %q (got %v)", body, seen)
		}
	}
}
