package step

import (
	"fmt"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
)

func init() {
	Define(Kind{
		Name:        "multicast",
		Description: "Sends a copy of the exchange to each step under steps (each step is one branch), one after the other or in parallel; an aggregate step right after it combines the replies.",
		Shape: config.Shape{Type: config.TypeObject, What: "a multicast", Keys: []config.Key{
			{Name: "strategy", Shape: config.Shape{Type: config.TypeString, What: "multicast strategy", Default: "sequential",
				Enum: []string{"parallel", "sequential"}, Description: "Run the branches one after the other (sequential) or at the same time (parallel)."}},
			{Name: "timeout", Shape: config.Shape{Type: config.TypeDuration, Description: "Cancel branches still running after this long; none by default."}},
			{Name: "stop_on_error", Shape: config.Shape{Type: config.TypeBool, Default: false, Description: "Stop at the first failed branch (sequential) or cancel the others (parallel)."}},
			{Name: "max_concurrency", Shape: config.Shape{Type: config.TypeInt, Description: "At most this many branches run at once (parallel only); all by default."}},
			{Name: "steps", Required: true, Shape: config.Shape{Type: config.TypeSteps, Description: "The branches: each step is one branch."}},
		}},
		Build: buildMulticast,
	})
}

// buildMulticast builds `multicast:` (spec §12.4); each step under steps is one branch:
//
//	steps:
//	  - multicast:
//	      strategy: parallel     # or sequential (default)
//	      timeout: 60s           # optional
//	      stop_on_error: false   # optional
//	      max_concurrency: 16    # optional, parallel only
//	      steps:
//	        - target: direct://a
//	        - target: direct://b
//	  - aggregate:
//	      strategy: collect
//	      completion: {size: 2, timeout: 30s}
//
// An `aggregate:` step directly after the multicast is absorbed (BuildContext.Peek /
// Consume): the two run as one processor, because the aggregation's completion
// decides how long the multicast waits and which branches it cancels.
func buildMulticast(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	opts := pattern.MulticastOptions{
		Parallel:       v.String("strategy") == "parallel",
		Timeout:        v.Duration("timeout"),
		StopOnError:    v.Bool("stop_on_error"),
		MaxConcurrency: v.Int("max_concurrency"),
	}
	if opts.Timeout < 0 {
		d.Errorf(v.NodeOf("timeout"), v.PathOf("timeout"), "timeout must not be negative")
	}
	if v.Has("max_concurrency") && opts.MaxConcurrency < 1 {
		d.Errorf(v.NodeOf("max_concurrency"), v.PathOf("max_concurrency"), "max_concurrency must be at least 1, got %d", opts.MaxConcurrency)
	}
	var branches []engine.Processor
	for _, b := range v.Steps("steps") {
		// One BuildSteps per branch: the branch gets its own (empty) lookahead,
		// so a multicast used as a branch cannot absorb the outer list's aggregate.
		var proc engine.Processor
		if built := BuildSteps(bc, []config.StepConfig{b}); len(built) == 1 {
			proc = built[0]
		}
		branches = append(branches, proc) // nil keeps branch indexes when a build failed
	}
	if v.Has("steps") && len(branches) == 0 && d.Err() == nil {
		d.Errorf(v.NodeOf("steps"), v.PathOf("steps"), "a multicast needs at least one branch step")
	}

	var agg *pattern.AggregateOptions
	if next, ok := bc.Peek(); ok && next.Kind == "aggregate" {
		bc.Consume()
		agg = decodeAggregate(bc, next, len(branches))
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if agg == nil {
		return pattern.NewMulticast(bc.HC, opts, branches).WithName(Name(s)), nil
	}
	m, err := pattern.NewMulticastAggregate(bc.HC, opts, branches, *agg)
	if err != nil {
		return nil, err
	}
	return m.WithName(Name(s)), nil
}

// decodeAggregate decodes an aggregate step absorbed by the multicast before it; its
// errors are recorded at the aggregate's own position. It returns nil on errors.
func decodeAggregate(bc *BuildContext, s config.StepConfig, branches int) *pattern.AggregateOptions {
	d := bc.Decoder(s)
	v := d.Decode(s.Node, s.Path, "an aggregate", &aggregateShape)
	agg := pattern.AggregateOptions{Strategy: v.String("strategy")}
	if c := v.Object("completion"); c != nil {
		agg.Size, agg.Timeout = c.Int("size"), c.Duration("timeout")
		switch {
		case !c.Has("size"):
		case agg.Size < 1:
			d.Errorf(c.NodeOf("size"), c.PathOf("size"), "completion size must be at least 1, got %d", agg.Size)
		case agg.Size > branches && branches > 0:
			d.Errorf(c.NodeOf("size"), c.PathOf("size"), "completion size %d is more than the %d branches of the multicast before it", agg.Size, branches).Hint = fmt.Sprintf("use a size from 1 to %d", branches)
		}
		if agg.Timeout < 0 {
			d.Errorf(c.NodeOf("timeout"), c.PathOf("timeout"), "completion timeout must not be negative")
		}
	}
	bc.warnings = append(bc.warnings, d.Warnings()...)
	if err := d.Err(); err != nil {
		bc.Add(config.AsErrors(err, s.Pos, s.Path)...)
		return nil
	}
	return &agg
}
