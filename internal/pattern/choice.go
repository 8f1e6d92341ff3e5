package pattern

import (
	"context"
	"errors"
	"fmt"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Predicate decides whether a [When] branch matches. It must not keep ex.
type Predicate func(ctx context.Context, ex *exchange.Exchange) (bool, error)

// When is one branch of a [Choice]: when Predicate matches, Steps run.
type When struct {
	Predicate Predicate
	// Steps run on the exchange itself (not a copy); nil means "do nothing".
	Steps engine.Processor
	// Name identifies the branch in errors ("helix.yaml:20:11 when"); optional.
	Name string
}

// Choice is the content-based router: the predicates are evaluated in order and the
// steps of the first match run; when none matches, Otherwise runs (when set) — else
// the exchange goes on unchanged, as in Camel. A predicate error fails the step.
type Choice struct {
	whens     []When
	otherwise engine.Processor
	name      string
}

var (
	_ engine.Processor = (*Choice)(nil)
	_ engine.Services  = (*Choice)(nil)
	_ engine.Named     = (*Choice)(nil)
)

// NewChoice returns a router over whens (first match wins) with an optional
// otherwise branch. It returns an error when a branch has no predicate.
func NewChoice(whens []When, otherwise engine.Processor) (*Choice, error) {
	for i, w := range whens {
		if w.Predicate == nil {
			return nil, fmt.Errorf("choice: when[%d] has no predicate", i)
		}
	}
	if len(whens) == 0 && otherwise == nil {
		return nil, errors.New("choice: needs at least one when or an otherwise")
	}
	return &Choice{whens: append([]When(nil), whens...), otherwise: otherwise, name: "choice"}, nil
}

// WithName sets the step name used in error messages and dead letter headers.
func (c *Choice) WithName(name string) *Choice { c.name = name; return c }

// Name returns the step name.
func (c *Choice) Name() string { return c.name }

// Process routes ex to the first matching branch.
func (c *Choice) Process(ctx context.Context, ex *exchange.Exchange) error {
	for i, w := range c.whens {
		ok, err := w.Predicate(ctx, ex)
		if err != nil {
			return fmt.Errorf("%s: %w", c.whenName(i), err)
		}
		if !ok {
			continue
		}
		if w.Steps == nil {
			return nil
		}
		return engine.RunStep(ctx, w.Steps, ex)
	}
	if c.otherwise == nil {
		return nil
	}
	return engine.RunStep(ctx, c.otherwise, ex)
}

func (c *Choice) whenName(i int) string {
	if n := c.whens[i].Name; n != "" {
		return n
	}
	return fmt.Sprintf("when[%d]", i)
}

// Children lets the engine find and start services nested in the branches.
func (c *Choice) Children() []engine.Processor {
	var out []engine.Processor
	for _, w := range c.whens {
		if w.Steps != nil {
			out = append(out, w.Steps)
		}
	}
	if c.otherwise != nil {
		out = append(out, c.otherwise)
	}
	return out
}
