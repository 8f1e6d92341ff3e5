package step

import (
	"context"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name:        "set-body",
		Description: "Replaces the body with a constant or the value of a Starlang script. `set-body: \"text\"` is short for `set-body: {constant: \"text\"}`; a script whose value is None sets an empty body unless it called write().",
		Shape:       config.Shape{Type: config.TypeObject, What: "a set-body step", Short: "constant", Keys: valueKeys("body")},
		Build:       buildSetBody,
	})
}

// setBody replaces the body:
//
//	steps:
//	  - set-body: {constant: "Hello ${body.name}"}
//	  - set-body: {starlang: '{"query": payload, "limit": 5}'}
//	  - set-body: "plain text"          # shorthand for constant:
//
// A script whose value is None sets an empty (nil) body, unless it called write().
type setBody struct {
	name string
	val  valueSource
}

func buildSetBody(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &setBody{name: Name(s)}
	st.val.decode(bc, d, v, "set-body")
	return st, d.Err()
}

func (b *setBody) Name() string { return b.name }

func (b *setBody) Process(ctx context.Context, ex *exchange.Exchange) error {
	v, written, err := b.val.eval(ctx, ex)
	if err != nil || written {
		return err
	}
	ex.In().SetBody(v)
	return nil
}
