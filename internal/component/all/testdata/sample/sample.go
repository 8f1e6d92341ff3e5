// Package sample is a component that exists only to prove that adding a component
// to Helix is one folder plus one import: nothing outside this folder names its
// scheme, yet validation, the JSON Schema, the generated component pages and
// tracing all know it once a test imports the package. It lives under testdata so
// that no build of Helix contains it.
package sample

import (
	"context"
	"log/slog"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Spec declares sample://name.
var Spec = &component.Spec{
	Scheme:    "sample",
	Summary:   "a test component that answers with its name",
	Direction: component.Both,
	Syntax:    "sample://name[?options]",
	Path:      []component.PathPart{{Name: "name", Description: "any name; the producer answers with it", Required: true}},
	Options: []component.Option{
		{Name: "shout", Type: component.TypeBool, Default: "false", Role: component.Both,
			Description: "answer in capitals"},
	},
	FreshExchanges: true,
	Trace: func(ex *exchange.Exchange, u *uri.URI) component.TraceInfo {
		return component.TraceInfo{Kind: component.SpanConsumer,
			Attributes: []component.KeyValue{{Key: "sample.name", Value: u.Host}}}
	},
}

func init() {
	component.Register(component.Module{Spec: Spec, New: func(env component.Env) (component.Component, error) {
		return &sampleComponent{logger: env.Logger}, nil
	}})
}

type sampleComponent struct{ logger func() *slog.Logger }

func (c *sampleComponent) Spec() *component.Spec { return Spec }

func (c *sampleComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	if _, err := Spec.Parse(u); err != nil {
		return nil, err
	}
	return &endpoint{raw: u.Raw, name: u.Host}, nil
}

type endpoint struct{ raw, name string }

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{name: e.name}, nil }

func (e *endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return component.NopService{}, nil
}

type producer struct {
	component.NopService
	name string
}

func (p *producer) Process(_ context.Context, ex *exchange.Exchange) error {
	ex.In().SetBody(p.name)
	return nil
}
