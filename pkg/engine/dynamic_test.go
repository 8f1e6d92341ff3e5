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

// templateRecorder's producers answer with the Template their endpoint was
// created with.
type templateRecorder struct{}

func (templateRecorder) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	return &templateEndpoint{raw: u.Raw, template: u.Template}, nil
}

type templateEndpoint struct{ raw, template string }

func (e *templateEndpoint) URI() string { return e.raw }
func (e *templateEndpoint) CreateProducer() (component.Producer, error) {
	return templateProducer{e}, nil
}
func (e *templateEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type templateProducer struct{ e *templateEndpoint }

func (templateProducer) Start(context.Context) error { return nil }
func (templateProducer) Stop(context.Context) error  { return nil }
func (p templateProducer) Process(_ context.Context, ex *exchange.Exchange) error {
	ex.In().SetBody("template=" + p.e.template)
	return nil
}

// The cache key of a dynamic producer keeps the URI and the template apart: a
// URI sent as it is, whose text is another URI, a NUL byte and a template, must
// not hand its producer (created without the template, so without the template's
// confinement of exchange-supplied options) to a later call of that template.
func TestDynamicCacheKeyCannotBeForged(t *testing.T) {
	h := engine.NewContext("t")
	h.AddComponent("rec", templateRecorder{})
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Stop(ctx) })
	const template = "rec://a/${body.p}"
	forged := exchange.New(exchange.InOut)
	if err := h.SendDynamic(ctx, "rec://a/x\x00"+template, forged); err != nil {
		t.Fatal(err)
	}
	if got := forged.In().Body(); got != "template=" {
		t.Fatalf("plain send: %v", got)
	}
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"p": "x"})
	if err := h.SendTemplate(ctx, template, ex); err != nil {
		t.Fatal(err)
	}
	if got := ex.In().Body(); got != "template="+template {
		t.Fatalf("the template call used the producer of the forged plain URI: %v, want template=%s", got, template)
	}
}
