package component_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// upperComponent is a custom component: upper:// targets upper-case the body, and
// upper://name?suffix=… appends a suffix. A component builds one endpoint per URI.
type upperComponent struct{}

// upperSpec declares what a user may write in an upper:// URI: Parse refuses
// anything else (with a did-you-mean), and `helix components` could list it.
var upperSpec = &component.Spec{
	Scheme:    "upper",
	Summary:   "Upper-cases the body.",
	Direction: component.ProducerOnly,
	Syntax:    "upper://name[?suffix=…]",
	Options: []component.Option{
		{Name: "suffix", Type: component.TypeString, Role: component.ProducerOnly, Description: "Text appended to the result."},
	},
}

// upperOptions receives the declared options: code reads fields, which the compiler
// checks, never options by name.
type upperOptions struct {
	Suffix string `option:"suffix"`
}

var upperBinding = component.Bind[upperOptions](upperSpec)

func (upperComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	opts, err := upperBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	return &upperEndpoint{raw: u.String(), suffix: opts.Suffix}, nil
}

type upperEndpoint struct{ raw, suffix string }

func (e *upperEndpoint) URI() string { return e.raw }

func (e *upperEndpoint) CreateProducer() (component.Producer, error) {
	return &upperProducer{suffix: e.suffix}, nil
}

// It can only be a target: as a trigger it says so, and Helix reports it.
func (e *upperEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

// upperProducer is what a target runs for each exchange; NopService gives it the
// Start and Stop a producer needs when it holds nothing (a connection would be
// opened in Start and closed in Stop).
type upperProducer struct {
	component.NopService
	suffix string
}

func (p *upperProducer) Process(ctx context.Context, ex *exchange.Exchange) error {
	ex.In().SetBody(strings.ToUpper(exchange.Stringify(ex.In().Body())) + p.suffix)
	return nil
}

// A custom component, written against the contract of this package and registered
// on an engine context under its scheme (an embedding program passes it to
// app.Build in app.Options.Components instead).
func Example() {
	h := engine.NewContext("custom")
	h.SetLogger(slog.New(slog.DiscardHandler))
	h.AddComponent("upper", upperComponent{})
	_ = h.AddWorkflow(&engine.Workflow{
		ID:      "shout",
		FromURI: "direct://shout",
		ToURIs:  []string{"upper://shout?suffix=!"},
	})
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer h.Stop(ctx)

	ex := exchange.NewWithBody(exchange.InOut, "hello")
	if err := h.Send(ctx, "direct://shout", ex); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ex.In().Body())
	// Output: HELLO!
}
