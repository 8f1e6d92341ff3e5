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

func init() { Register("choice", buildChoice) }

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
func buildChoice(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
	d := bc.Decoder(s)
	var whens []pattern.When
	var otherwise engine.Processor
	d.Mapping(s.Node, s.Path, "a choice", config.Fields{
		"when": func(v *yaml.Node, p string) {
			items, _ := d.Sequence(v, p, "when")
			for i, item := range items {
				if w, ok := buildWhen(bc, d, item, config.IndexPath(p, i)); ok {
					whens = append(whens, w)
				}
			}
			if len(items) == 0 && !config.IsNull(v) && v.Kind == yaml.SequenceNode {
				d.Errorf(v, p, "a choice needs at least one when branch")
			}
		},
		"otherwise": func(v *yaml.Node, p string) {
			v = d.Resolve(v)
			var steps []config.StepConfig
			if v != nil && v.Kind == yaml.SequenceNode {
				steps = d.Steps(v, p)
			} else {
				d.Mapping(v, p, "otherwise", config.Fields{
					"steps": func(v *yaml.Node, p string) { steps = d.Steps(v, p) },
				}, "steps")
			}
			otherwise = nestedPipeline(bc, steps)
		},
	}, "when")
	if err := d.Err(); err != nil {
		return nil, err
	}
	c, err := pattern.NewChoice(whens, otherwise)
	if err != nil {
		return nil, err
	}
	return c.WithName(Name(s)), nil
}

func buildWhen(bc *BuildContext, d *config.Decoder, item *yaml.Node, path string) (pattern.When, bool) {
	item = d.Resolve(item)
	var script *starlang.Script
	var steps []config.StepConfig
	ok := d.Mapping(item, path, "a when branch", config.Fields{
		"starlang": func(v *yaml.Node, p string) { script = CompileScript(bc, d, v, p) },
		"steps":    func(v *yaml.Node, p string) { steps = d.Steps(v, p) },
	}, "starlang", "steps")
	if !ok || script == nil {
		return pattern.When{}, false
	}
	return pattern.When{
		Predicate: func(ctx context.Context, ex *exchange.Exchange) (bool, error) {
			return script.EvalBool(ctx, ex)
		},
		Steps: nestedPipeline(bc, steps),
		Name:  d.Pos(item).String() + " when",
	}, true
}

// nestedPipeline builds a nested step list (a choice branch) into one processor. The
// workflow's error handler and interceptors apply to the composite step as a whole.
func nestedPipeline(bc *BuildContext, steps []config.StepConfig) engine.Processor {
	return engine.BuildPipeline(BuildSteps(bc, steps), nil, nil)
}
