package step

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name: "split",
		Description: "Camel's Splitter: runs the nested steps once per element of a list body (or per line or chunk of a text body, " +
			"or per element of the list a Starlang expression gives), one after the other or in parallel; " +
			"the results are aggregated in input order. Errors name the element's index.",
		Shape: config.Shape{Type: config.TypeObject, What: "a split", Keys: []config.Key{
			{Name: "starlang", Shape: config.Shape{Type: config.TypeStarlang,
				Description: "An expression giving the list to split (default: the body, which must then be a list)."}},
			{Name: "lines", Shape: config.Shape{Type: config.TypeBool, Default: false,
				Description: "Split a text body into its lines."}},
			{Name: "chunk_size", Shape: config.Shape{Type: config.TypeByteSize,
				Description: "Split a text body into chunks of this size (64KiB, 1MiB …)."}},
			{Name: "parallel", Shape: config.Shape{Type: config.TypeBool, Default: false,
				Description: "Run the elements at the same time; results stay in input order."}},
			{Name: "max_concurrency", Shape: config.Shape{Type: config.TypeInt, Default: pattern.MaxParallelBranches,
				Description: "At most this many elements run at once (parallel only)."}},
			{Name: "stop_on_error", Shape: config.Shape{Type: config.TypeBool, Default: true,
				Description: "Stop at the first failed element; false goes on and records the failures."}},
			{Name: "max_elements", Shape: config.Shape{Type: config.TypeInt, Default: pattern.DefaultMaxSplitElements,
				Description: "Refuse bodies with more elements than this."}},
			{Name: "aggregate", Shape: config.Shape{Type: config.TypeAny, Default: splitCollect,
				Description: "What the body becomes: collect (the list of results), original (the body as it was) or {starlang: …}, an expression over the variable results.",
				AnyOf: []*config.Shape{
					{Type: config.TypeString, Enum: []string{splitCollect, splitOriginal}},
					{Type: config.TypeObject, Keys: []config.Key{{Name: "starlang", Required: true, Shape: config.Shape{Type: config.TypeStarlang}}}},
				}}},
			{Name: "steps", Required: true, Shape: config.Shape{Type: config.TypeSteps, Description: "The steps run for each element."}},
		}},
		Build: buildSplit,
	})
}

// The aggregations a split accepts as a word; a mapping {starlang: …} is the third form.
const (
	splitCollect  = "collect"
	splitOriginal = "original"
)

// splitResultsVar is the variable the aggregate script of a split reads the results
// from.
const splitResultsVar = "results"

// splitConfig is a decoded `split:` step.
type splitConfig struct {
	opts      pattern.SplitOptions
	by        pattern.Splitter
	aggregate *starlang.Script // nil: collect or original (opts.KeepOriginal)
	steps     []config.StepConfig
}

// buildSplit builds `split:` (Camel's Splitter; docs/patterns.md):
//
//	steps:
//	  - split:
//	      starlang: payload["orders"]   # optional: the list to split; default: the body
//	      lines: true                   # or: the lines of a text body
//	      chunk_size: 64KiB             # or: chunks of a text body
//	      parallel: true                # optional, default false
//	      max_concurrency: 8            # optional, parallel only, default 16
//	      stop_on_error: false          # optional, default true
//	      max_elements: 50000           # optional, default 10000
//	      aggregate: collect            # or original, or {starlang: "sum(results)"}
//	      steps:
//	        - target: direct://one-order
func buildSplit(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	sc, err := decodeSplit(bc, s, d, v)
	// The nested steps are built even when the options are wrong: every error of the
	// file is reported at once.
	steps := BuildSteps(bc, sc.steps)
	if err != nil {
		return nil, err
	}
	if sc.aggregate != nil {
		sc.opts.Aggregate = scriptAggregate(sc.aggregate)
	}
	sp, err := pattern.NewSplit(bc.HC, sc.by, sc.opts, steps...)
	if err != nil {
		return nil, err // decodeSplit checks every option NewSplit does; kept as a guard
	}
	return sp.WithName(Name(s)), nil
}

// decodeSplit decodes and checks a split step's options, compiling its scripts; all
// the decoding of the step is here.
func decodeSplit(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (*splitConfig, error) {
	sc := &splitConfig{steps: v.Steps("steps")}
	var expr *starlang.Script
	var how []*config.Value // the ways of splitting that were chosen, for the conflict error
	if x := v.Get("starlang"); x != nil {
		expr = CompileScript(bc, d, x.Node, x.Path)
		how = append(how, x)
	}
	lines := v.Bool("lines")
	if lines {
		how = append(how, v.Get("lines"))
	}
	chunk := int64(0)
	if x := v.Get("chunk_size"); x != nil {
		chunk, _ = x.V.(int64)
		if chunk > 0 {
			how = append(how, x)
		}
		if chunk > 1<<40 {
			d.Errorf(x.Node, x.Path, "chunk_size %d is too large", chunk).Hint = "a chunk is held in memory: use a size such as 64KiB or 1MiB"
			chunk = 0
		}
	}
	sc.opts.Parallel = v.Bool("parallel")
	concurrencyNode := v.NodeOf("max_concurrency")
	if x := v.Get("max_concurrency"); x != nil {
		if sc.opts.MaxConcurrency = v.Int("max_concurrency"); sc.opts.MaxConcurrency < 1 {
			d.Errorf(x.Node, x.Path, "max_concurrency must be at least 1, got %d", sc.opts.MaxConcurrency)
			sc.opts.MaxConcurrency = 0
		}
	}
	sc.opts.ContinueOnError = v.Has("stop_on_error") && !v.Bool("stop_on_error")
	if x := v.Get("max_elements"); x != nil {
		if sc.opts.MaxElements = v.Int("max_elements"); sc.opts.MaxElements < 1 {
			d.Errorf(x.Node, x.Path, "max_elements must be at least 1, got %d", sc.opts.MaxElements).Hint =
				fmt.Sprintf("leave it out for the default of %d", pattern.DefaultMaxSplitElements)
			sc.opts.MaxElements = 0
		}
	}
	if x := v.Get("aggregate"); x != nil {
		sc.aggregate = decodeSplitAggregate(bc, d, x.Node, x.Path, &sc.opts)
	}
	// In the order they are written.
	sort.Slice(how, func(i, j int) bool {
		a, b := how[i].Node, how[j].Node
		return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
	})
	if len(how) > 1 {
		names := make([]string, len(how))
		for i, x := range how {
			names[i] = x.Path[strings.LastIndexByte(x.Path, '.')+1:]
		}
		d.Errorf(s.Node, s.Path, "a split takes one of starlang, lines and chunk_size, not %s", strings.Join(names, " and ")).Hint =
			"starlang computes the list, lines and chunk_size cut a text body; without any of them the body must be a list"
	}
	if concurrencyNode != nil && !sc.opts.Parallel {
		d.Errorf(concurrencyNode, config.KeyPath(s.Path, "max_concurrency"), "max_concurrency only applies to a parallel split").Hint = "add parallel: true, or leave max_concurrency out"
		sc.opts.MaxConcurrency = 0
	}
	switch {
	case expr != nil:
		sc.by = pattern.SplitValue(func(ctx context.Context, ex *exchange.Exchange) (any, error) {
			res, err := expr.EvalValue(ctx, ex)
			switch {
			case err != nil:
				return nil, err
			case res.Written:
				return nil, errors.New("the split expression called write(): it computes the list to split and must not change the body")
			case !res.HasValue:
				return nil, errors.New("the split expression has no value (None): end it with an expression giving the list to split")
			}
			return res.Value, nil
		})
	case lines:
		sc.by = pattern.SplitLines()
	case chunk > 0:
		sc.by = pattern.SplitChunks(int(chunk))
	default:
		sc.by = pattern.SplitBody()
	}
	return sc, d.Err()
}

// decodeSplitAggregate decodes `aggregate:`: collect, original, or {starlang: …}. It
// returns the compiled script of the last form.
func decodeSplitAggregate(bc *BuildContext, d *config.Decoder, v *yaml.Node, p string, opts *pattern.SplitOptions) *starlang.Script {
	v = d.Resolve(v)
	if v != nil && v.Kind == yaml.MappingNode {
		var script *starlang.Script
		d.Mapping(v, p, "a split aggregate", config.Fields{
			"starlang": func(v *yaml.Node, p string) {
				// The script reads the results as a variable: it is defined for the
				// check of the names it reads, and only for it.
				had := bc.vars[splitResultsVar]
				if bc.vars == nil {
					bc.vars = map[string]bool{}
				}
				bc.vars[splitResultsVar] = true
				script = CompileScript(bc, d, v, p)
				if !had {
					delete(bc.vars, splitResultsVar)
				}
			},
		}, "starlang")
		return script
	}
	const hint = "use collect (the list of results, the default), original (keep the body as it was) or {starlang: …} (an expression over results)"
	if v == nil || v.Kind != yaml.ScalarNode {
		d.Errorf(v, p, "a split aggregate is a word or a mapping {starlang: …}").Hint = hint
		return nil
	}
	switch w := strings.ToLower(d.String(v, p)); w {
	case splitCollect:
	case splitOriginal:
		opts.KeepOriginal = true
	default:
		e := d.Errorf(v, p, "unknown split aggregate %q", w)
		if e.Hint = config.DidYouMean(w, []string{splitCollect, splitOriginal}); e.Hint == "" {
			e.Hint = hint
		}
	}
	return nil
}

// scriptAggregate makes the body after a split from a Starlang script that reads the
// results in variable `results` (and the exchange as it was before the split): like
// transform, the body becomes the script's value, or what it wrote with write(); a
// script without a value leaves the body unchanged.
func scriptAggregate(script *starlang.Script) func(context.Context, *exchange.Exchange, []any) error {
	return func(ctx context.Context, ex *exchange.Exchange, results []any) error {
		// A copy, so that `results` is not left in the exchange's variables.
		scratch := ex.CopyWithBody(ex.In().Body())
		scratch.SetVariable(splitResultsVar, results)
		res, err := script.EvalValue(ctx, scratch)
		if err != nil {
			return err
		}
		switch {
		case res.Written:
			ex.In().SetBody(scratch.In().Body())
			ex.In().SetHeader(exchange.HeaderContentType, scratch.In().Header(exchange.HeaderContentType))
		case res.HasValue:
			ex.In().SetBody(res.Value)
		}
		return nil
	}
}
