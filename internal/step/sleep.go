package step

import (
	"context"
	"fmt"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name: "sleep",
		Description: "Waits for a while, then goes on with the exchange unchanged. In a durable workflow the run parks: it holds no goroutine and the wait survives restarts " +
			"(a timer whose time passed while Helix was down fires at start); otherwise the step waits in memory and ends early, failing, when the run is cancelled. " +
			"`sleep: 10m` is short for `sleep: {for: 10m}`.",
		Shape: config.Shape{Type: config.TypeObject, What: "a sleep step", Short: "for", Keys: []config.Key{
			{Name: "for", Required: true, Shape: config.Shape{Type: config.TypeDuration,
				Description: "How long to wait (30s, 2h, 72h)."}},
		}},
		Build: buildSleep,
	})
}

// sleepStep waits for a fixed time:
//
//	steps:
//	  - sleep: 24h
type sleepStep struct {
	name string
	d    time.Duration
}

func buildSleep(_ *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &sleepStep{name: Name(s), d: v.Duration("for")}
	if v.Has("for") && st.d <= 0 {
		d.Errorf(v.NodeOf("for"), v.PathOf("for"), "sleep for a positive duration, not %s", st.d).Hint = "for example sleep: 5m"
	}
	return st, d.Err()
}

func (s *sleepStep) Name() string { return s.name }

func (s *sleepStep) Process(ctx context.Context, _ *exchange.Exchange) error {
	return waitUntil(ctx, "sleep", time.Now().Add(s.d))
}

// waitUntil waits until t: a durable run parks on a timer, another waits in
// memory. A step that runs again after its timer fired goes on at once.
func waitUntil(ctx context.Context, kind string, t time.Time) error {
	if _, resumed := durable.ResolutionFor(ctx, ""); resumed { // a sleep's wait has no key
		return nil
	}
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	if _, ok := durable.RunID(ctx); ok {
		return durable.Park(durable.Wait{Kind: durable.WaitSleep, Due: t})
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: stopped before %s: %w", kind, t.UTC().Format(time.RFC3339), context.Cause(ctx))
	}
}
