package pattern

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// VariablesFunc computes the variables an [Enrich] step sets, e.g. the top-level
// assignments of a Starlang script. It must not change ex.
type VariablesFunc func(ctx context.Context, ex *exchange.Exchange) (map[string]any, error)

// Enrich sets exchange variables ([exchange.Exchange.SetVariable]) computed from the
// exchange; every later step sees them (Starlang as predeclared names and in
// `variables`, placeholders as ${variable.name}). The body and headers are unchanged.
// Names starting with "_" are private to the script and are not set.
type Enrich struct {
	vars VariablesFunc
	name string
}

var (
	_ engine.Processor = (*Enrich)(nil)
	_ engine.Named     = (*Enrich)(nil)
)

// NewEnrich returns an enrich step computing its variables with vars.
func NewEnrich(vars VariablesFunc) (*Enrich, error) {
	if vars == nil {
		return nil, errors.New("enrich: needs a function computing the variables")
	}
	return &Enrich{vars: vars, name: "enrich"}, nil
}

// WithName sets the step name used in error messages and dead letter headers.
func (e *Enrich) WithName(name string) *Enrich { e.name = name; return e }

// Name returns the step name.
func (e *Enrich) Name() string { return e.name }

// Process computes the variables and sets them, in name order (deterministic when a
// variable observer logs them). On error no variable is set.
func (e *Enrich) Process(ctx context.Context, ex *exchange.Exchange) error {
	vars, err := e.vars(ctx, ex)
	if err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		if k == "" || k[0] == '_' {
			continue
		}
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ex.SetVariable(k, vars[k])
	}
	return nil
}
