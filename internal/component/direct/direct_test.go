package direct_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	"github.com/arvenza/helix/internal/component/direct"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.InProcessFeatures,
		Setup: func(t *testing.T) *componenttest.Fixture {
			return componenttest.InProcessFixture(t, direct.New(), "direct://conformance")
		},
	})
}

func mustEndpoint(t *testing.T, c component.Component, raw string) component.Endpoint {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func TestDirectErrors(t *testing.T) {
	comp := direct.New()
	tests := []struct {
		name    string
		run     func() error
		wantErr string
	}{
		{"empty name", func() error {
			_, err := comp.CreateEndpoint(&uri.URI{Raw: "direct://", Scheme: "direct"})
			return err
		}, "needs a name"},
		{"no consumer", func() error {
			p, _ := mustEndpoint(t, comp, "direct://nobody").CreateProducer()
			return p.Process(context.Background(), exchange.New(exchange.InOnly))
		}, "no workflow is listening"},
		{"second consumer on one name", func() error {
			ep := mustEndpoint(t, comp, "direct://dup")
			noop := component.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil })
			c1, _ := ep.CreateConsumer(noop)
			if err := c1.Start(context.Background()); err != nil {
				return err
			}
			defer c1.Stop(context.Background())
			c2, _ := ep.CreateConsumer(noop)
			err := c2.Start(context.Background())
			// Stopping the consumer that failed to start must leave the first in place.
			_ = c2.Stop(context.Background())
			p, _ := ep.CreateProducer()
			if perr := p.Process(context.Background(), exchange.New(exchange.InOnly)); perr != nil {
				return fmt.Errorf("the first consumer was unregistered: %w", perr)
			}
			return err
		}, "already has a consumer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

// A processor error of the consuming workflow is the caller's error, unchanged.
func TestDirectPropagatesError(t *testing.T) {
	comp := direct.New()
	boom := errors.New("boom")
	c, _ := mustEndpoint(t, comp, "direct://fails").CreateConsumer(component.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return boom }))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	p, _ := mustEndpoint(t, comp, "direct://fails").CreateProducer()
	if err := p.Process(context.Background(), exchange.New(exchange.InOut)); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the consumer's error", err)
	}
	if got := comp.Names(); len(got) != 1 || got[0] != "fails" {
		t.Fatalf("Names() = %v, want [fails]", got)
	}
}
