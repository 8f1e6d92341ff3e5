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
	"sync"
	"time"

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
	e *endpoint
	p component.Processor

	mu      sync.Mutex
	started bool
	stop    chan struct{}      // closed by Stop: fire no more
	done    chan struct{}      // closed when the goroutine returned
	cancel  context.CancelFunc // cancels the exchange in flight when Stop gives up waiting
}

func (c *consumer) Start(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return fmt.Errorf("%s: consumer already started", c.e.raw)
	}
	c.started = true
	// The exchanges' context is the consumer's own, not Start's: Start's context only
	// bounds starting.
	ctx, cancel := context.WithCancel(context.Background())
	c.stop, c.done, c.cancel = make(chan struct{}), make(chan struct{}), cancel
	go c.run(ctx, c.stop, c.done)
	return nil
}

func (c *consumer) run(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
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
	c.mu.Lock()
	if !c.started || c.stop == nil {
		c.mu.Unlock()
		return nil
	}
	stop, done, cancel := c.stop, c.done, c.cancel
	c.stop = nil
	c.mu.Unlock()
	close(stop)
	defer cancel()
	return awaitDone(ctx, done, cancel, c.e.raw)
}

// awaitDone waits for done; when ctx (or DefaultStopTimeout) ends first it cancels the
// work and allows it a second to notice.
func awaitDone(ctx context.Context, done <-chan struct{}, cancel context.CancelFunc, raw string) error {
	if _, ok := ctx.Deadline(); !ok {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, DefaultStopTimeout)
		defer c()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-time.After(time.Second):
		return fmt.Errorf("stop %s: the exchange in flight ignored cancellation", raw)
	}
}
