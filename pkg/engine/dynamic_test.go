package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

type lifeCounter struct{ started, stopped atomic.Int64 }

func (l *lifeCounter) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	return &lifeEndpoint{l: l, raw: u.Raw}, nil
}

type lifeEndpoint struct {
	l   *lifeCounter
	raw string
}

func (e *lifeEndpoint) URI() string { return e.raw }
func (e *lifeEndpoint) CreateProducer() (component.Producer, error) {
	return &lifeProducer{e: e}, nil
}
func (e *lifeEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type lifeProducer struct{ e *lifeEndpoint }

func (p *lifeProducer) Start(context.Context) error { p.e.l.started.Add(1); return nil }
func (p *lifeProducer) Stop(context.Context) error  { p.e.l.stopped.Add(1); return nil }
func (p *lifeProducer) Process(_ context.Context, ex *exchange.Exchange) error {
	ex.In().SetBody(p.e.raw)
	return nil
}

// Placeholder targets resolve to a new URI per user id; the producers they need are
// bounded, and every one that was started is stopped by the time Stop returns.
func TestDynamicTargetsAreBounded(t *testing.T) {
	lc := &lifeCounter{}
	h := engine.NewContext("t")
	h.AddComponent("life", lc)
	_ = h.AddWorkflow(&engine.Workflow{ID: "w", FromURI: "direct://w", ToURIs: []string{"life://api/users/${body.id}"}})
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := engine.MaxDynamicProducers + 50
	for i := 0; i < n; i++ {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"id": fmt.Sprint(i)})
		if err := h.Send(ctx, "direct://w", ex); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("life://api/users/%d", i); ex.In().Body() != want {
			t.Fatalf("body %v, want %s", ex.In().Body(), want)
		}
	}
	if got := h.DynamicProducers(); got != engine.MaxDynamicProducers {
		t.Fatalf("open dynamic producers = %d, want %d", got, engine.MaxDynamicProducers)
	}
	if open := lc.started.Load() - lc.stopped.Load(); open != int64(engine.MaxDynamicProducers) {
		t.Fatalf("started-stopped = %d", open)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if lc.started.Load() != int64(n) || lc.stopped.Load() != int64(n) {
		t.Fatalf("started %d stopped %d, want %d each", lc.started.Load(), lc.stopped.Load(), n)
	}
	err := h.SendDynamic(ctx, "life://x", exchange.New(exchange.InOut))
	if err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("send after stop: %v", err)
	}
}
