package direct

import (
	"github.com/arvenza/helix/pkg/component"
)

func init() {
	component.Register(component.Module{Spec: Spec, New: func(env component.Env) (component.Component, error) {
		return New(), nil
	}})
}
