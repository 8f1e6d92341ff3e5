// Package log implements log://name: a producer that writes the exchange to the
// context's slog logger. Options (level, showHeaders) are declared in spec.go
// ([Spec]). The body is not changed.
package log

import (
	"context"
	"log/slog"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Component is the log:// component. Safe for concurrent use.
type Component struct {
	logger func() *slog.Logger
}

var _ component.Component = (*Component)(nil)

// New returns a log component writing to the logger that logger() returns at call time.
func New(logger func() *slog.Logger) *Component {
	if logger == nil {
		logger = slog.Default
	}
	return &Component{logger: logger}
}

// uriOptions are the URI's options (see Spec).
type uriOptions struct {
	Level       string `option:"level"`
	ShowHeaders bool   `option:"showHeaders"`
}

var uriBinding = component.Bind[uriOptions](Spec)

func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	opts, err := uriBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
	level, show := levels[opts.Level], opts.ShowHeaders
	return &endpoint{c: c, raw: u.Raw, name: u.Host + u.Path, level: level, showHeaders: show}, nil
}

type endpoint struct {
	c           *Component
	raw, name   string
	level       slog.Level
	showHeaders bool
}

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{e: e}, nil }

func (e *endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type producer struct {
	component.NopService
	e *endpoint
}

func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	attrs := []any{"logger", p.e.name, "exchange", ex.ID(), "body", exchange.Stringify(ex.In().Body())}
	if p.e.showHeaders {
		attrs = append(attrs, "headers", exchange.Stringify(ex.In().Headers()))
	}
	if err := ex.Exception(); err != nil {
		attrs = append(attrs, "exception", err.Error())
	}
	if m := ex.In().HeaderString(exchange.HeaderExceptionMessage); m != "" {
		attrs = append(attrs, "error", m)
	}
	p.e.c.logger().Log(ctx, p.e.level, "exchange", attrs...)
	return nil
}
