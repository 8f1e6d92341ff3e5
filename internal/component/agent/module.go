package agent

import (
	"fmt"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
)

func init() {
	component.Register(component.Module{Spec: Spec, New: func(env component.Env) (component.Component, error) {
		hc, ok := env.Engine.(*engine.Context)
		if !ok {
			return nil, fmt.Errorf("%s:// needs an engine context, got %T", Spec.Scheme, env.Engine)
		}
		return New(hc), nil
	}})
}
