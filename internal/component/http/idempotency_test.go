package http_test

import (
	"context"
	"testing"

	helixhttp "github.com/arvenza/helix/internal/component/http"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// A request made in a durable run's step carries the step's idempotency key as
// Idempotency-Key, unless the exchange sets the header itself; a request outside
// a durable run carries none.
func TestIdempotencyKeyHeader(t *testing.T) {
	t.Parallel()
	srv, last := recordingServer(t)
	comp := helixhttp.New(nil)
	defer comp.Stop(context.Background())
	u, err := uri.Parse(srv.URL + "/orders")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ep.CreateProducer()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	keyed := durable.WithKey(context.Background(), "run-7/3/0")
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		headers map[string]any
		want    string
	}{
		{"durable step", keyed, nil, "run-7/3/0"},
		{"the user's own key", keyed, map[string]any{"Idempotency-Key": "mine"}, "mine"},
		{"not durable", context.Background(), nil, ""},
		{"the run's own key, from its trigger", durable.WithDurable(keyed, "wf:order-9"), map[string]any{"Idempotency-Key": "order-9"}, "run-7/3/0"},
		{"the user's key in a run named by another", durable.WithDurable(keyed, "wf:order-9"), map[string]any{"Idempotency-Key": "mine"}, "mine"},
	} {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"id": 1})
		for k, v := range tc.headers {
			ex.In().SetHeader(k, v)
		}
		if err := p.Process(tc.ctx, ex); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := last().header.Get("Idempotency-Key"); got != tc.want {
			t.Errorf("%s: Idempotency-Key %q, want %q", tc.name, got, tc.want)
		}
	}
}
