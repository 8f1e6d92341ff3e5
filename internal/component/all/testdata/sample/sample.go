// Package sample is a component that exists only to prove that adding a component
// to Helix is one folder plus one import: nothing outside this folder names its
// scheme, yet validation, the JSON Schema, the generated component pages and
// tracing all know it once a test imports the package, and its settings block
// helix.sample reaches the component it builds. It lives under testdata so that no
// build of Helix contains it.
package sample

import (
	"context"
	"log/slog"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
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

// Settings is helix.sample.
type Settings struct{ Greeting string }

func init() {
	config.DeclareModuleSettings(config.ModuleSettings{Name: "sample", Doc: "Settings of the sample component.",
		Decode: func(d *config.Decoder, n *yaml.Node, path string) any {
			s := &Settings{}
			d.Mapping(n, path, "helix.sample", config.Fields{
				"greeting": func(v *yaml.Node, p string) {
					d.Doc(v, "What sample:// producers say before the name.")
					s.Greeting = d.String(v, p)
				},
			})
			return s
		}})
	component.Register(component.Module{Spec: Spec, New: func(env component.Env) (component.Component, error) {
		c := &sampleComponent{logger: env.Logger, greeting: "hello"}
		if s, ok := env.Settings.(*Settings); ok && s.Greeting != "" {
			c.greeting = s.Greeting
		}
		return c, nil
	}})
}

type sampleComponent struct {
	logger   func() *slog.Logger
	greeting string
}

func (c *sampleComponent) Spec() *component.Spec { return Spec }

func (c *sampleComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	if _, err := Spec.Parse(u); err != nil {
		return nil, err
	}
	return &endpoint{raw: u.Raw, answer: c.greeting + " " + u.Host}, nil
}

type endpoint struct{ raw, answer string }

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) {
	return &producer{answer: e.answer}, nil
}

func (e *endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return component.NopService{}, nil
}

type producer struct {
	component.NopService
	answer string
}

func (p *producer) Process(_ context.Context, ex *exchange.Exchange) error {
	ex.In().SetBody(p.answer)
	return nil
}
