package step

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/pattern"
)

func init() { Register("multicast", buildMulticast) }

// buildMulticast builds `multicast:` (spec §12.4); each step under steps is one branch:
//
//	steps:
//	  - multicast:
//	      strategy: parallel     # or sequential (default)
//	      timeout: 60s           # optional
//	      stop-on-error: false   # optional
//	      max-concurrency: 16    # optional, parallel only
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
func buildMulticast(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
	d := bc.Decoder(s)
	var opts pattern.MulticastOptions
	var branches []engine.Processor
	var branchesNode *yaml.Node
	d.Mapping(s.Node, s.Path, "a multicast", config.Fields{
		"strategy": func(v *yaml.Node, p string) {
			switch strategy := strings.ToLower(d.String(v, p)); strategy {
			case "parallel":
				opts.Parallel = true
			case "sequential", "":
			default:
				d.Errorf(v, p, "unknown multicast strategy %q", strategy).Hint = "use parallel or sequential"
			}
		},
		"timeout": func(v *yaml.Node, p string) {
			if opts.Timeout = d.Duration(v, p); opts.Timeout < 0 {
				d.Errorf(v, p, "timeout must not be negative")
			}
		},
		"stop-on-error": func(v *yaml.Node, p string) { opts.StopOnError = d.Bool(v, p) },
		"max-concurrency": func(v *yaml.Node, p string) {
			if opts.MaxConcurrency = d.Int(v, p); opts.MaxConcurrency < 1 {
				d.Errorf(v, p, "max-concurrency must be at least 1, got %d", opts.MaxConcurrency)
			}
		},
		"steps": func(v *yaml.Node, p string) {
			branchesNode = v
			for _, b := range d.Steps(v, p) {
				// One BuildSteps per branch: the branch gets its own (empty) lookahead,
				// so a multicast used as a branch cannot absorb the outer list's aggregate.
				var proc engine.Processor
				if built := BuildSteps(bc, []config.StepConfig{b}); len(built) == 1 {
					proc = built[0]
				}
				branches = append(branches, proc) // nil keeps branch indexes when a build failed
			}
		},
	}, "steps")
	if branchesNode != nil && len(branches) == 0 && d.Err() == nil {
		d.Errorf(branchesNode, config.KeyPath(s.Path, "steps"), "a multicast needs at least one branch step")
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
	var agg pattern.AggregateOptions
	d.Mapping(s.Node, s.Path, "an aggregate", config.Fields{
		"strategy": func(v *yaml.Node, p string) {
			agg.Strategy = d.String(v, p)
			if !strings.EqualFold(agg.Strategy, pattern.StrategyCollect) {
				d.Errorf(v, p, "unknown aggregation strategy %q", agg.Strategy).Hint = "the supported strategy is collect (the list of branch replies, in branch order)"
			}
		},
		"completion": func(v *yaml.Node, p string) {
			d.Mapping(v, p, "completion", config.Fields{
				"size": func(v *yaml.Node, p string) {
					agg.Size = d.Int(v, p)
					switch {
					case agg.Size < 1:
						d.Errorf(v, p, "completion size must be at least 1, got %d", agg.Size)
					case agg.Size > branches && branches > 0:
						d.Errorf(v, p, "completion size %d is more than the %d branches of the multicast before it", agg.Size, branches).Hint = fmt.Sprintf("use a size from 1 to %d", branches)
					}
				},
				"timeout": func(v *yaml.Node, p string) {
					if agg.Timeout = d.Duration(v, p); agg.Timeout < 0 {
						d.Errorf(v, p, "completion timeout must not be negative")
					}
				},
			})
		},
	})
	if err := d.Err(); err != nil {
		bc.Add(config.AsErrors(err, s.Pos, s.Path)...)
		return nil
	}
	return &agg
}
