package step

import (
	"context"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/starlang"
)

func init() {
	Register("transform", func(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
		return buildScriptStep(bc, s, false)
	})
	Register("process", func(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
		return buildScriptStep(bc, s, true)
	})
}

// scriptStep runs a Starlang script against the exchange.
//
// transform: the body becomes the script's value; if the script called write(), the
// written body stays; a None value (no final expression) leaves the body unchanged.
//
// process: the same, except that a None value keeps the payload as the script left
// it, so in-place changes (payload["total"] = 42) are applied. Use process for
// validation and enrichment of the current body, transform to compute a new one.
type scriptStep struct {
	name    string
	script  *starlang.Script
	process bool
}

func buildScriptStep(bc *BuildContext, s config.StepConfig, process bool) (engine.Processor, error) {
	d := bc.Decoder(s)
	st := &scriptStep{name: Name(s), process: process}
	d.Mapping(s.Node, s.Path, "a "+s.Kind+" step", config.Fields{
		"starlang": func(v *yaml.Node, p string) { st.script = CompileScript(bc, d, v, p) },
	}, "starlang")
	return st, d.Err()
}

func (t *scriptStep) Name() string { return t.name }

func (t *scriptStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	res, err := t.script.Eval(ctx, ex)
	if err != nil {
		return err
	}
	switch {
	case res.Written:
	case res.HasValue:
		ex.In().SetBody(res.Value)
	case t.process:
		ex.In().SetBody(res.Payload)
	}
	return nil
}
