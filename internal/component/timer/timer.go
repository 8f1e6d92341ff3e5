// Package timer implements timer://name: a consumer that fires InOnly exchanges on a
// schedule, like Apache Camel's timer component.
//
// Options (period, delay, repeatCount) and headers are declared in spec.go ([Spec]).
// Each exchange has no body and the headers HelixTimerName (the name) and
// HelixTimerCounter (1-based int). The schedule is fixed-delay: a slow workflow pushes
// the next firing back instead of piling exchanges up. The timer is consumer-only.
package timer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/arvenza/helix/internal/runloop"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// DefaultStopTimeout bounds Stop when its context has no deadline.
const DefaultStopTimeout = 30 * time.Second

// Component is the timer:// component. Safe for concurrent use; it holds no shared state.
type Component struct {
	logger func() *slog.Logger
}

var _ component.Component = (*Component)(nil)

// New returns a timer component that reports failed exchanges to the logger that
// logger() returns at that moment (slog.Default when logger is nil).
func New(logger func() *slog.Logger) *Component {
	if logger == nil {
		logger = slog.Default
	}
	return &Component{logger: logger}
}

// uriOptions are the URI's options (see Spec).
type uriOptions struct {
	Period      time.Duration `option:"period"`
	Delay       time.Duration `option:"delay"`
	RepeatCount int64         `option:"repeatCount"`
}

var uriBinding = component.Bind[uriOptions](Spec)

// CreateEndpoint validates the options; nothing starts until a consumer does.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	name := u.Host + u.Path
	if name == "" {
		return nil, fmt.Errorf("timer needs a name: timer://tick?period=5s")
	}
	opts, err := uriBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	period, delay, repeat := opts.Period, opts.Delay, opts.RepeatCount
	if repeat < 0 {
		return nil, fmt.Errorf("option repeatCount=%d must be a whole number >= 0 (0 means forever)", repeat)
	}
	if delay < 0 {
		return nil, fmt.Errorf("option delay=%s must not be negative", delay)
	}
	if period <= 0 && repeat != 1 {
		return nil, fmt.Errorf("option period=%s must be positive (a zero period is only allowed with repeatCount=1)", period)
	}
	return &endpoint{c: c, raw: u.Raw, name: name, period: period, delay: delay, repeat: int(repeat)}, nil
}

type endpoint struct {
	c      *Component
	raw    string
	name   string
	period time.Duration
	delay  time.Duration
	repeat int
}

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) {
	return nil, component.ErrConsumerOnly
}

func (e *endpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	if p == nil {
		return nil, errors.New("timer: consumer needs a processor")
	}
	return &consumer{e: e, p: p}, nil
}

// consumer owns one goroutine between Start and Stop.
type consumer struct {
	e    *endpoint
	p    component.Processor
	loop runloop.Loop
}

func (c *consumer) Start(context.Context) error {
	// The exchanges' context is the loop's own, not Start's: Start's context only
	// bounds starting.
	if !c.loop.Start(c.run) {
		return fmt.Errorf("%s: consumer already started or stopped", c.e.raw)
	}
	return nil
}

func (c *consumer) run(ctx context.Context, stop <-chan struct{}) {
	wait := time.NewTimer(c.e.delay)
	defer wait.Stop()
	for n := 1; c.e.repeat == 0 || n <= c.e.repeat; n++ {
		select {
		case <-stop:
			return
		case <-wait.C:
		}
		// Stop may have been called while the timer fired; prefer stopping.
		select {
		case <-stop:
			return
		default:
		}
		ex := exchange.New(exchange.InOnly)
		ex.In().SetHeader(HeaderName, c.e.name)
		ex.In().SetHeader(HeaderCounter, n)
		err := c.p.Process(ctx, ex)
		if err == nil {
			err = ex.Exception()
		}
		if err != nil {
			// The engine logs every failed exchange once, at WARN and rate-limited;
			// this line only adds the tick, for debugging.
			c.e.c.logger().Debug("timer exchange failed", "uri", c.e.raw, "counter", n, "error", err)
		}
		wait.Reset(c.e.period)
	}
}

// Stop stops firing and waits for the exchange in flight. When ctx ends first (or
// DefaultStopTimeout passes without a deadline) the exchange's context is cancelled
// and Stop waits one more second for it before reporting an error.
func (c *consumer) Stop(ctx context.Context) error {
	if err := c.loop.Stop(ctx, DefaultStopTimeout, time.Second); err != nil {
		return fmt.Errorf("stop %s: %w", c.e.raw, err)
	}
	return nil
}
