package componenttest

import (
	"context"
	"testing"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// InProcessFeatures are the features of a component that hands the sender's exchange
// to a consumer of the same endpoint on the sender's goroutine (direct://, tool://).
var InProcessFeatures = Features{
	Producer: true, Consumer: true, RequestReply: true, Headers: true,
	PassThrough: true, ProducerCancel: true, ConsumerCancel: true, ConcurrentConsumer: true,
	Stress: true,
}

// InProcessFixture builds the fixture of such a component: the outside world of its
// producer is a consumer on the same endpoint (another workflow), and the outside
// sender of its consumer is a producer on it.
func InProcessFixture(t *testing.T, comp component.Component, rawURI string) *Fixture {
	return &Fixture{
		Component: comp,
		URI:       rawURI,
		Listen: func() <-chan Message {
			ch := make(chan Message, 256)
			cons, err := mustEndpoint(t, comp, rawURI).CreateConsumer(component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
				ch <- messageOf(ex)
				body := exchange.Stringify(ex.In().Body())
				if body == BlockBody {
					<-ctx.Done()
					return ctx.Err()
				}
				ex.In().SetBody(ReplyPrefix + body)
				ex.In().SetHeader(ReplyHeader, "yes")
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if err := cons.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cons.Stop(context.Background()) })
			return ch
		},
		Send: func(ctx context.Context, m Message) (Message, error) {
			p, err := mustEndpoint(t, comp, rawURI).CreateProducer()
			if err != nil {
				return Message{}, err
			}
			ex := exchange.NewWithBody(exchange.InOut, m.Body)
			for k, v := range m.Headers {
				ex.In().SetHeader(k, v)
			}
			if err := p.Process(ctx, ex); err != nil {
				return Message{}, err
			}
			return messageOf(ex), nil
		},
	}
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

// messageOf renders an exchange's in-message as text.
func messageOf(ex *exchange.Exchange) Message {
	m := Message{Body: exchange.Stringify(ex.In().Body()), Headers: map[string]string{}}
	for k, v := range ex.In().Headers() {
		m.Headers[k] = exchange.Stringify(v)
	}
	return m
}
