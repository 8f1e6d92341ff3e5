package step

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/starlang"
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

// valueFields returns the decoder fields of a valueSource.
func (v *valueSource) fields(bc *BuildContext, d *config.Decoder, f config.Fields) config.Fields {
	f["constant"] = func(n *yaml.Node, p string) {
		v.constant, v.hasConstant = d.Value(n, p), true
		if s, ok := v.constant.(string); ok {
			checkPlaceholders(d, n, p, s)
		}
	}
	f["starlang"] = func(n *yaml.Node, p string) { v.script = CompileScript(bc, d, n, p) }
	return f
}

// check reports a step that has neither or both sources.
func (v *valueSource) check(d *config.Decoder, n *yaml.Node, path, what string, scriptSet bool) {
	switch {
	case v.hasConstant && scriptSet:
		d.Errorf(n, path, "%s has both constant: and starlang:; keep one", what)
	case !v.hasConstant && !scriptSet:
		d.Errorf(n, path, "%s needs constant: or starlang:", what).Hint = `for example constant: "text ${body.name}" or starlang: 'payload["name"]'`
	}
}

// eval computes the value for ex. written reports that the script called write(),
// which has already replaced the body.
func (v *valueSource) eval(ctx context.Context, ex *exchange.Exchange) (val any, written bool, err error) {
	if v.script != nil {
		res, err := v.script.Eval(ctx, ex)
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

// hasKey reports whether mapping n has key (used to tell "starlang: with a compile
// error" from "no starlang:").
func hasKey(n *yaml.Node, key string) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}
