package step

import (
	"context"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() { Register("set-body", buildSetBody) }

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

func buildSetBody(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
	d := bc.Decoder(s)
	st := &setBody{name: Name(s)}
	if s.Node != nil && s.Node.Kind == yaml.ScalarNode && !config.IsNull(s.Node) {
		st.val.constant, st.val.hasConstant = s.Node.Value, true
		checkPlaceholders(d, s.Node, s.Path, s.Node.Value)
		return st, d.Err()
	}
	d.Mapping(s.Node, s.Path, "a set-body step", st.val.fields(bc, d, config.Fields{}))
	st.val.check(d, s.Node, s.Path, "set-body", hasKey(s.Node, "starlang"))
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
