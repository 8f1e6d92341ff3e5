package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// deadlockDeadline turns a deadlock into a failure instead of a hung test binary.
const deadlockDeadline = 10 * time.Second

// callbackComponent calls back into its Context from CreateEndpoint, as the package
// docs of pkg/component allow.
type callbackComponent struct {
	hc *engine.Context
}

func (c *callbackComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	_ = c.hc.Logger()
	if _, ok := c.hc.Component("direct"); !ok {
		return nil, nil
	}
	// An endpoint built from another one (as tool:// does with direct://).
	inner, err := c.hc.Endpoint("direct://" + u.Host)
	if err != nil {
		return nil, err
	}
	return inner, nil
}

func TestCreateEndpointMayCallBackIntoContext(t *testing.T) {
	h := engine.NewContext("t")
	h.AddComponent("cb", &callbackComponent{hc: h})
	done := make(chan error, 1)
	go func() {
		_, err := h.Endpoint("cb://x")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(deadlockDeadline):
		t.Fatal("Context.Endpoint deadlocked: CreateEndpoint called back into the Context")
	}
}

// gatedComponent's producers block in Start until release is closed, so that a test
// can run Stop while a producer is being created.
type gatedComponent struct {
	starting chan struct{} // receives one value per producer Start
	release  chan struct{}
	started  atomic.Int64
	stopped  atomic.Int64
}

func newGated() *gatedComponent {
	return &gatedComponent{starting: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gatedComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	return &gatedEndpoint{g: g, raw: u.Raw}, nil
}

type gatedEndpoint struct {
	g   *gatedComponent
	raw string
}

func (e *gatedEndpoint) URI() string { return e.raw }
func (e *gatedEndpoint) CreateProducer() (component.Producer, error) {
	return &gatedProducer{g: e.g}, nil
}
func (e *gatedEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type gatedProducer struct{ g *gatedComponent }

func (p *gatedProducer) Start(context.Context) error {
	p.g.starting <- struct{}{}
	<-p.g.release
	p.g.started.Add(1)
	return nil
}
func (p *gatedProducer) Stop(context.Context) error { p.g.stopped.Add(1); return nil }
func (p *gatedProducer) Process(context.Context, *exchange.Exchange) error {
	return nil
}

// stopWhileStarting runs Stop as soon as a producer has entered Start, then lets
// that Start finish.
func stopWhileStarting(t *testing.T, h *engine.Context, g *gatedComponent) {
	t.Helper()
	go func() {
		<-g.starting
		if err := h.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		close(g.release)
	}()
}

func TestProducerCreatedDuringStopIsStopped(t *testing.T) {
	g := newGated()
	h := engine.NewContext("t")
	h.AddComponent("gated", g)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopWhileStarting(t, h, g)
	p, err := h.Producer(context.Background(), "gated://a")
	if err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("Producer finishing after Stop: got %v, %v; want a 'stopped' error", p, err)
	}
	if g.started.Load() != 1 || g.stopped.Load() != 1 {
		t.Fatalf("producer started %d times, stopped %d times; want 1 and 1", g.started.Load(), g.stopped.Load())
	}
}

func TestDynamicProducerCreatedDuringStopIsStopped(t *testing.T) {
	g := newGated()
	h := engine.NewContext("t")
	h.AddComponent("gated", g)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopWhileStarting(t, h, g)
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("SendDynamic after stopDynamic panicked: %v", r)
			}
		}()
		err = h.SendDynamic(context.Background(), "gated://b", exchange.New(exchange.InOut))
	}()
	if err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("SendDynamic finishing after Stop: got %v; want a 'stopped' error", err)
	}
	if g.started.Load() != 1 || g.stopped.Load() != 1 {
		t.Fatalf("producer started %d times, stopped %d times; want 1 and 1", g.started.Load(), g.stopped.Load())
	}
	if n := h.DynamicProducers(); n != 0 {
		t.Fatalf("dynamic producers after stop = %d", n)
	}
}
