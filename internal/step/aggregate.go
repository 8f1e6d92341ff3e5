package step

import (
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
)

func init() {
	Define(Kind{
		Name:        "aggregate",
		Description: "Aggregates the replies of the multicast step directly before it (the two run as one processor); the completion decides how long the multicast waits.",
		Shape:       aggregateShape,
		Build:       buildAggregate,
	})
}

var aggregateShape = config.Shape{Type: config.TypeObject, What: "an aggregate", Keys: []config.Key{
	{Name: "strategy", Shape: config.Shape{Type: config.TypeString, What: "aggregation strategy", Default: pattern.StrategyCollect,
		Enum:        []string{pattern.StrategyCollect},
		Description: "How replies are combined: collect makes the body the list of branch replies, in branch order."}},
	{Name: "completion", Shape: config.Shape{Type: config.TypeObject, What: "completion",
		Description: "When the aggregation is complete; by default when every branch has replied.",
		Keys: []config.Key{
			{Name: "size", Shape: config.Shape{Type: config.TypeInt, Description: "Complete after this many replies (1 to the number of branches); the other branches are cancelled."}},
			{Name: "timeout", Shape: config.Shape{Type: config.TypeDuration, Description: "Complete with the replies received so far after this long."}},
		}}},
}}

// buildAggregate is only reached for an aggregate that no multicast absorbed (see
// buildMulticast): Helix aggregates the replies of the multicast right before it, and
// has no standalone, correlation-based aggregator.
func buildAggregate(_ *BuildContext, s config.StepConfig, d *config.Decoder, _ *config.Values) (engine.Processor, error) {
	d.Add(&config.Error{Pos: s.Pos, Path: s.Path,
		Msg:  "aggregate must directly follow a multicast step",
		Hint: "aggregate collects the replies of the multicast just before it; move it right after the multicast"})
	return nil, d.Err()
}
