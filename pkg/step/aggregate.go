package step

import (
	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
)

func init() { Register("aggregate", buildAggregate) }

// buildAggregate is only reached for an aggregate that no multicast absorbed (see
// buildMulticast): Helix aggregates the replies of the multicast right before it, and
// has no standalone, correlation-based aggregator.
func buildAggregate(_ *BuildContext, s config.StepConfig) (engine.Processor, error) {
	return nil, &config.Error{Pos: s.Pos, Path: s.Path,
		Msg:  "aggregate must directly follow a multicast step",
		Hint: "aggregate collects the replies of the multicast just before it; move it right after the multicast"}
}
