// Package log implements log://name: a producer that writes the exchange to the
// context's slog logger. Options: level=debug|info|warn|error (default info),
// showHeaders=true. The body is not changed.
package log

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

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

func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	var level slog.Level
	switch strings.ToLower(u.Param("level", "info")) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("log: level=%q: use debug, info, warn or error", u.Param("level", ""))
	}
	show, err := u.Bool("showHeaders", false)
	if err != nil {
		return nil, err
	}
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
