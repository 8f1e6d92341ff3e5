package step

import (
	"context"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name:        "enrich",
		Description: "Runs a Starlang script whose top-level assignments become exchange variables, visible to every later step.",
		Shape: config.Shape{Type: config.TypeObject, What: "an enrich step", Keys: []config.Key{
			{Name: "starlang", Required: true, Shape: config.Shape{Type: config.TypeStarlang,
				Description: "The Starlang script; each top-level assignment (accountId = payload[\"accountId\"]) sets a variable."}},
		}},
		Build: buildEnrich,
	})
}

// buildEnrich builds `enrich:`, whose script's top-level assignments become exchange
// variables for every later step (see pattern.Enrich and docs/patterns.md):
//
//	steps:
//	  - enrich:
//	      starlang: |
//	        accountId = payload["accountId"]
func buildEnrich(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	var script *starlang.Script
	if sc := v.Get("starlang"); sc != nil {
		script = CompileScript(bc, d, sc.Node, sc.Path)
	}
	if err := d.Err(); err != nil || script == nil {
		return nil, err
	}
	bc.defineVariables(script)
	e, err := pattern.NewEnrich(func(ctx context.Context, ex *exchange.Exchange) (map[string]any, error) {
		res, err := script.Eval(ctx, ex)
		if err != nil {
			return nil, err
		}
		return res.Globals, nil
	})
	if err != nil {
		return nil, err
	}
	return e.WithName(Name(s)), nil
}
