package engine_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// cannedProducer answers every exchange with its body.
type cannedProducer struct {
	component.NopService
	body string
}

func (p cannedProducer) Process(_ context.Context, ex *exchange.Exchange) error {
	ex.In().SetBody(p.body)
	return nil
}

// TestOverrideProducersReplacesChosenTargets checks the hook `helix test` mocks
// targets through: the URIs it claims (written as they are, or resolved from a
// placeholder) get its producer; every other URI still goes to its component.
func TestOverrideProducersReplacesChosenTargets(t *testing.T) {
	hc := engine.NewContext("override")
	hc.AddComponent("life", &lifeCounter{})
	var asked []string
	hc.OverrideProducers(func(u *uri.URI) (component.Producer, bool) {
		asked = append(asked, u.Raw)
		if u.Host == "mocked" {
			return cannedProducer{body: "canned " + u.Raw}, true
		}
		return nil, false
	})
	ctx := context.Background()
	send := func(target string, dynamic bool) any {
		t.Helper()
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"id": "7"})
		var err error
		if dynamic {
			err = hc.SendTemplate(ctx, target, ex)
		} else {
			err = hc.Send(ctx, target, ex)
		}
		if err != nil {
			t.Fatalf("send %s: %v", target, err)
		}
		return ex.In().Body()
	}
	if got := send("life://mocked/a", false); got != "canned life://mocked/a" {
		t.Errorf("static mocked target answered %v", got)
	}
	if got := send("life://mocked/${body.id}", true); got != "canned life://mocked/7" {
		t.Errorf("templated mocked target answered %v", got)
	}
	if got := send("life://real/a", false); got != "life://real/a" {
		t.Errorf("a target the override declines must reach its component, got %v", got)
	}
	if len(asked) != 3 {
		t.Errorf("override asked %d times (%v), want once per new producer", len(asked), asked)
	}
	if err := hc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
