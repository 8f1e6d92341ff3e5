package step

import (
	"context"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	script := config.Key{Name: "starlang", Required: true, Shape: config.Shape{Type: config.TypeStarlang,
		Description: "The Starlang script; payload (alias body) is the current body, headers the headers."}}
	Define(Kind{
		Name:        "transform",
		Description: "Runs a Starlang script; its value becomes the body (a None value leaves the body unchanged; a body written with write() stays).",
		Shape:       config.Shape{Type: config.TypeObject, What: "a transform step", Keys: []config.Key{script}},
		Build: func(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
			return buildScriptStep(bc, s, d, v, false)
		},
	})
	Define(Kind{
		Name:        "process",
		Description: "Runs a Starlang script like transform, except that a None value keeps the payload as the script left it, so in-place changes (payload[\"total\"] = 42) apply.",
		Shape:       config.Shape{Type: config.TypeObject, What: "a process step", Keys: []config.Key{script}},
		Build: func(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
			return buildScriptStep(bc, s, d, v, true)
		},
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

func buildScriptStep(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values, process bool) (engine.Processor, error) {
	st := &scriptStep{name: Name(s), process: process}
	if sc := v.Get("starlang"); sc != nil {
		st.script = CompileScript(bc, d, sc.Node, sc.Path)
	}
	return st, d.Err()
}

func (t *scriptStep) Name() string { return t.name }

func (t *scriptStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	var res *starlang.Result
	var err error
	if t.process {
		res, err = t.script.Eval(ctx, ex)
	} else {
		// transform never uses the payload the script leaves behind.
		res, err = t.script.EvalValue(ctx, ex)
	}
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
