package step

import (
	"context"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/pattern"
	"github.com/arvenza/helix/pkg/starlang"
)

func init() { Register("enrich", buildEnrich) }

// buildEnrich builds `enrich:`, whose script's top-level assignments become exchange
// variables for every later step (see pattern.Enrich and docs/patterns.md):
//
//	steps:
//	  - enrich:
//	      starlang: |
//	        accountId = payload["accountId"]
func buildEnrich(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
	d := bc.Decoder(s)
	var script *starlang.Script
	d.Mapping(s.Node, s.Path, "an enrich step", config.Fields{
		"starlang": func(v *yaml.Node, p string) { script = CompileScript(bc, d, v, p) },
	}, "starlang")
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
