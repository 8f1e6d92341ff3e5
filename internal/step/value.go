package step

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// valueSource is the `constant:` or `starlang:` of set-body and set-header.
// A constant string may hold ${…} placeholders, resolved per exchange; any other
// constant (a number, a YAML mapping or list) is used as is, copied per exchange so
// that later steps may mutate it.
type valueSource struct {
	constant    any
	hasConstant bool
	script      *starlang.Script
}

// valueKeys are the keys of a valueSource, declared once for set-body and set-header.
func valueKeys(what string) []config.Key {
	return []config.Key{
		{Name: "constant", Shape: config.Shape{Type: config.TypeAny,
			Description: "A constant " + what + ": a string with ${…} placeholders resolved per exchange, or any YAML value used as is."}},
		{Name: "starlang", Shape: config.Shape{Type: config.TypeStarlang,
			Description: "A Starlang script whose value is the " + what + "."}},
	}
}

// decode reads the constant: or starlang: of vals and reports a step that has
// neither or both; what names the step in the message.
func (v *valueSource) decode(bc *BuildContext, d *config.Decoder, vals *config.Values, what string) {
	if c := vals.Get("constant"); c != nil {
		v.constant, v.hasConstant = d.Value(c.Node, c.Path), true
		if c.Node == vals.Node { // the short form set-body: text is always text
			v.constant = c.Node.Value
		}
		if s, ok := v.constant.(string); ok {
			CheckPlaceholders(d, c.Node, c.Path, s)
		}
	}
	sc := vals.Get("starlang")
	if sc != nil {
		v.script = CompileScript(bc, d, sc.Node, sc.Path)
	}
	n := vals.Node
	switch {
	case v.hasConstant && sc != nil:
		d.Errorf(n, vals.Path, "%s has both constant: and starlang:; keep one", what)
	case !v.hasConstant && sc == nil && (n == nil || n.Kind == yaml.MappingNode || config.IsNull(n)):
		d.Errorf(n, vals.Path, "%s needs constant: or starlang:", what).Hint = `for example constant: "text ${body.name}" or starlang: 'payload["name"]'`
	}
}

// eval computes the value for ex. written reports that the script called write(),
// which has already replaced the body.
func (v *valueSource) eval(ctx context.Context, ex *exchange.Exchange) (val any, written bool, err error) {
	if v.script != nil {
		res, err := v.script.EvalValue(ctx, ex)
		if err != nil {
			return nil, false, err
		}
		return res.Value, res.Written, nil
	}
	if s, ok := v.constant.(string); ok {
		out, err := uri.Expand(s, ex)
		if err != nil {
			return nil, false, fmt.Errorf("constant: %w", err)
		}
		return out, false, nil
	}
	return exchange.DeepCopy(v.constant), false, nil
}
