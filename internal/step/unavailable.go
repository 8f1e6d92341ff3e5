package step

import (
	"fmt"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
)

// Step kinds the specification documents whose runtime is not part of this build.
// They are registered so that a config using them gets a clear answer instead of
// "unknown step" with a misleading did-you-mean, and never pretends to run.
var unavailable = map[string]string{}

func init() {
	for kind, why := range unavailable {
		Define(Kind{
			Name:        kind,
			Description: "Not available in this build: " + why + ". Its value is not checked.",
			Shape:       config.Shape{Type: config.TypeAny},
			Build: func(_ *BuildContext, s config.StepConfig, _ *config.Decoder, _ *config.Values) (engine.Processor, error) {
				return nil, &config.Error{Pos: s.Pos, Path: s.Path,
					Msg: fmt.Sprintf("step %s is not available in this build", s.Kind), Hint: why}
			},
		})
	}
}
