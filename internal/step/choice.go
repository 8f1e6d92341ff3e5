package step

import (
	"context"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name:        "choice",
		Description: "Content-based router: runs the steps of the first when branch whose Starlang condition is true, else the otherwise steps.",
		Shape: config.Shape{Type: config.TypeObject, What: "a choice", Keys: []config.Key{
			{Name: "when", Required: true, Shape: config.Shape{Type: config.TypeList, Description: "The branches, tried in order.",
				Items: &config.Shape{Type: config.TypeObject, What: "a when branch", Keys: []config.Key{
					{Name: "starlang", Required: true, Shape: config.Shape{Type: config.TypeStarlang, Description: "The condition: a Starlang expression."}},
					{Name: "steps", Required: true, Shape: config.Shape{Type: config.TypeSteps, Description: "The steps run when the condition is true."}},
				}}}},
			{Name: "otherwise", Shape: config.Shape{Type: config.TypeObject, What: "otherwise", Short: "steps",
				Description: "The steps run when no condition is true; a step list, or a mapping with steps:.",
				Keys: []config.Key{
					{Name: "steps", Required: true, Shape: config.Shape{Type: config.TypeSteps, Description: "The steps run when no condition is true."}},
				}}},
		}},
		Build: buildChoice,
	})
}

// buildChoice builds the content-based router (spec §10.2, §12.3):
//
//	steps:
//	  - choice:
//	      when:
//	        - starlang: '"billing" in payload'
//	          steps:
//	            - target: kafka://billing-tickets
//	      otherwise:
//	        steps:
//	          - target: kafka://general-tickets
//
// `otherwise:` may also be written as a step list directly.
func buildChoice(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	var whens []pattern.When
	for _, w := range v.Objects("when") {
		var script *starlang.Script
		if sc := w.Get("starlang"); sc != nil {
			script = CompileScript(bc, d, sc.Node, sc.Path)
		}
		steps := nestedPipeline(bc, w.Steps("steps"))
		if script == nil {
			continue
		}
		whens = append(whens, pattern.When{
			Predicate: func(ctx context.Context, ex *exchange.Exchange) (bool, error) {
				return script.EvalBool(ctx, ex)
			},
			Steps: steps,
			Name:  d.Pos(w.Node).String() + " when",
		})
	}
	if wn := d.Resolve(v.NodeOf("when")); wn != nil && wn.Kind == yaml.SequenceNode && len(wn.Content) == 0 {
		d.Errorf(wn, v.PathOf("when"), "a choice needs at least one when branch")
	}
	var otherwise engine.Processor
	if o := v.Object("otherwise"); o != nil {
		otherwise = nestedPipeline(bc, o.Steps("steps"))
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	c, err := pattern.NewChoice(whens, otherwise)
	if err != nil {
		return nil, err
	}
	return c.WithName(Name(s)), nil
}

// nestedPipeline builds a nested step list (a choice branch) into one processor. The
// workflow's error handler and interceptors apply to the composite step as a whole.
func nestedPipeline(bc *BuildContext, steps []config.StepConfig) engine.Processor {
	return engine.NestedPipeline(bc.HC, BuildSteps(bc, steps))
}
