package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// countingComponent records endpoint creation and lifecycle calls so tests can see
// the engine's ordering guarantees.
type countingComponent struct {
	mu        sync.Mutex
	endpoints int
	events    []string
	failStart string // consumer host whose Start fails
}

func (c *countingComponent) log(s string) { c.mu.Lock(); c.events = append(c.events, s); c.mu.Unlock() }

func (c *countingComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	c.mu.Lock()
	c.endpoints++
	c.mu.Unlock()
	return &countingEndpoint{c: c, name: u.Host}, nil
}

type countingEndpoint struct {
	c    *countingComponent
	name string
}

func (e *countingEndpoint) URI() string { return "count://" + e.name }
func (e *countingEndpoint) CreateProducer() (component.Producer, error) {
	return &countingProducer{e: e}, nil
}
func (e *countingEndpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	return &countingConsumer{e: e}, nil
}

type countingProducer struct{ e *countingEndpoint }

func (p *countingProducer) Start(context.Context) error {
	p.e.c.log("start producer " + p.e.name)
	return nil
}
func (p *countingProducer) Stop(context.Context) error {
	p.e.c.log("stop producer " + p.e.name)
	return nil
}
func (p *countingProducer) Process(_ context.Context, ex *exchange.Exchange) error {
	ex.In().SetBody("sent to " + p.e.name)
	return nil
}

type countingConsumer struct{ e *countingEndpoint }

func (c *countingConsumer) Start(context.Context) error {
	if c.e.name == c.e.c.failStart {
		return errors.New("boom")
	}
	c.e.c.log("start consumer " + c.e.name)
	return nil
}
func (c *countingConsumer) Stop(context.Context) error {
	c.e.c.log("stop consumer " + c.e.name)
	return nil
}

func TestProducersStartBeforeConsumersAndStopAfter(t *testing.T) {
	cc := &countingComponent{}
	h := engine.NewContext("t")
	h.AddComponent("count", cc)
	if err := h.AddWorkflow(&engine.Workflow{ID: "a", FromURI: "count://in", ToURIs: []string{"count://out?b=2&a=1"}}); err != nil {
		t.Fatal(err)
	}
	if err := h.AddWorkflow(&engine.Workflow{ID: "b", FromURI: "count://in2", ToURIs: []string{"count://out?a=1&b=2"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cc.events, ",")
	want := "start producer out,start consumer in,start consumer in2,stop consumer in2,stop consumer in,stop producer out"
	if got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	// in, in2, and one endpoint for both spellings of out.
	if cc.endpoints != 3 {
		t.Fatalf("endpoints built = %d, want 3 (one per normalised URI)", cc.endpoints)
	}
}

func TestStartFailurePartWayStopsWhatStarted(t *testing.T) {
	cc := &countingComponent{failStart: "bad"}
	h := engine.NewContext("t")
	h.AddComponent("count", cc)
	_ = h.AddWorkflow(&engine.Workflow{ID: "ok", FromURI: "count://good"})
	_ = h.AddWorkflow(&engine.Workflow{ID: "bad", FromURI: "count://bad"})
	err := h.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "workflow bad") {
		t.Fatalf("want start error naming workflow bad, got %v", err)
	}
	got := strings.Join(cc.events, ",")
	if got != "start consumer good,stop consumer good" {
		t.Fatalf("events = %s", got)
	}
}

func TestDuplicateWorkflowAndUnknownScheme(t *testing.T) {
	h := engine.NewContext("t")
	if err := h.AddWorkflow(&engine.Workflow{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := h.AddWorkflow(&engine.Workflow{ID: "x"}); err == nil {
		t.Fatal("duplicate id accepted")
	}
	_ = h.AddWorkflow(&engine.Workflow{ID: "y", FromURI: "nope://z"})
	err := h.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), `no component for scheme "nope"`) {
		t.Fatalf("got %v", err)
	}
}

func TestDirectRequestReplyAndMissingConsumer(t *testing.T) {
	h := engine.NewContext("t")
	_ = h.AddWorkflow(&engine.Workflow{ID: "upper", FromURI: "direct://upper", Processors: []engine.Processor{
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody(strings.ToUpper(ex.In().Body().(string)))
			return nil
		}),
	}})
	_ = h.AddWorkflow(&engine.Workflow{ID: "caller", FromURI: "direct://caller", ToURIs: []string{"direct://upper"}})
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Stop(ctx)
	ex := exchange.NewWithBody(exchange.InOut, "hi")
	if err := h.Send(ctx, "direct://caller", ex); err != nil {
		t.Fatal(err)
	}
	if ex.In().Body() != "HI" {
		t.Fatalf("body = %v", ex.In().Body())
	}
	err := h.Send(ctx, "direct://missing", exchange.New(exchange.InOut))
	if err == nil || !strings.Contains(err.Error(), "no workflow is listening") {
		t.Fatalf("got %v", err)
	}
}

func TestPanicAndExceptionStopPipeline(t *testing.T) {
	var after atomic.Int32
	h := engine.NewContext("t")
	_ = h.AddWorkflow(&engine.Workflow{ID: "p", FromURI: "direct://p", Processors: []engine.Processor{
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error { panic("kaboom") }),
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error { after.Add(1); return nil }),
	}})
	_ = h.AddWorkflow(&engine.Workflow{ID: "e", FromURI: "direct://e", Processors: []engine.Processor{
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			ex.SetException(errors.New("set by step"))
			return nil
		}),
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error { after.Add(1); return nil }),
	}})
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Stop(ctx)
	err := h.Run(ctx, "p", exchange.New(exchange.InOut))
	if !engine.IsPanic(err) {
		t.Fatalf("want panic error, got %v", err)
	}
	err = h.Run(ctx, "e", exchange.New(exchange.InOut))
	if err == nil || !strings.Contains(err.Error(), "set by step") {
		t.Fatalf("got %v", err)
	}
	if after.Load() != 0 {
		t.Fatal("steps after a failure ran")
	}
}

func TestStopDrainsInFlight(t *testing.T) {
	h := engine.NewContext("t")
	release := make(chan struct{})
	entered := make(chan struct{})
	var finished atomic.Bool
	_ = h.AddWorkflow(&engine.Workflow{ID: "slow", FromURI: "direct://slow", Processors: []engine.Processor{
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			close(entered)
			<-release
			finished.Store(true)
			return nil
		}),
	}})
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.Run(ctx, "slow", exchange.New(exchange.InOut)) }()
	<-entered
	stopped := make(chan error)
	go func() { stopped <- h.Stop(ctx) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while an exchange was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if !finished.Load() {
		t.Fatal("in-flight exchange did not finish before Stop returned")
	}
}

func TestStopGivesUpAtDeadlineAndCancels(t *testing.T) {
	h := engine.NewContext("t")
	h.Go(func(ctx context.Context) { <-ctx.Done() })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = h.Start(context.Background())
	if err := h.Stop(ctx); err != nil {
		t.Fatalf("background work honouring cancellation should stop cleanly: %v", err)
	}
}

// RunUntilStop's run ends when its ctx ends, when Stop gives up draining, and at
// once for a run started after Stop; a run of no workflow fails like Run's.
func TestRunUntilStopEndsAtAbandon(t *testing.T) {
	h := engine.NewContext("t")
	started := make(chan struct{}, 4)
	block := engine.ProcessorFunc(func(ctx context.Context, _ *exchange.Exchange) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	if err := h.AddWorkflow(&engine.Workflow{ID: "block", Processors: []engine.Processor{block}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.RunUntilStop(context.Background(), "nope", exchange.New(exchange.InOut)); err == nil ||
		err.Error() != `no workflow with id "nope"` {
		t.Errorf("unknown workflow: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- h.RunUntilStop(ctx, "block", exchange.New(exchange.InOut)) }()
	<-started
	cancel()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("ctx cancelled: %v", err)
	}

	for range 2 {
		go func() { ended <- h.RunUntilStop(context.Background(), "block", exchange.New(exchange.InOut)) }()
	}
	<-started
	<-started
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stopCancel()
	if err := h.Stop(stopCtx); err != nil {
		t.Errorf("stop: %v", err)
	}
	for range 2 {
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("abandoned run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a run went on after Stop gave up draining")
		}
	}
	if err := h.RunUntilStop(context.Background(), "block", exchange.New(exchange.InOut)); !errors.Is(err, context.Canceled) {
		t.Errorf("run after Stop: %v", err)
	}
}
