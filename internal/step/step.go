// Package step turns the steps of a YAML step list (config.StepConfig) into engine
// processors. Each step kind lives in its own file and declares itself once in
// init() with [Define]: its name, description and the shape of its value (keys,
// types, defaults, enums, nested step lists), which drives decoding, the JSON
// Schema of the YAML file ([JSONSchema], `helix schema`) and docs/steps.md
// ([Reference]). Composite steps (choice, multicast, split …) build their nested
// step lists with [BuildSteps].
//
// Building never stops at the first problem: builders decode their node strictly
// (unknown keys are errors with positions), compile Starlang scripts and check
// endpoint URIs, and every error goes to the [BuildContext] so that one
// `helix validate` run reports all of them.
package step

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/engine"
)

// Builder builds the processor of one step. It returns the errors it found, ideally
// as config.Errors with positions (a *config.Decoder collects them); any other error
// is reported at the step's position. Returning (nil, nil) means the builder already
// recorded its errors in bc (through [BuildContext.CheckEndpoint], say).
type Builder func(bc *BuildContext, s config.StepConfig) (engine.Processor, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Builder{}
)

// Register makes a step kind available with a builder that decodes the node
// itself. Prefer [Define], which also declares the kind's keys for the schema and
// the docs (TestEveryStepKindHasASpec fails for a kind registered without one). It
// is called from init() of the file that implements the kind; registering a kind
// twice is a programming error and panics.
func Register(kind string, b Builder) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic(fmt.Sprintf("step: kind %q registered twice", kind))
	}
	registry[kind] = b
}

// Kinds lists the registered step kinds, sorted.
func Kinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func lookup(kind string) (Builder, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	b, ok := registry[kind]
	return b, ok
}

// maxSteps bounds the number of steps one build may create, so that a hostile file
// that nests aliases of step lists cannot make building explode.
const maxSteps = 100000

// BuildContext is what builders get: the engine context the workflow is built for,
// and the error collector. One BuildContext serves a whole configuration; it is not
// safe for concurrent use.
type BuildContext struct {
	// HC is the engine context; builders use it for targets and component lookups.
	HC *engine.Context
	// Workflow is the id of the workflow (or tool) being built, for log attributes.
	Workflow string
	// Trigger is the trigger URI of the workflow being built ("" for none). It tells
	// whether the workflow's exchanges can carry variables set elsewhere (direct://
	// hands the caller's exchange over) when checking the names scripts read.
	Trigger string
	// Starlang tunes every script compiled (memory budget …); nil means defaults.
	Starlang *starlang.Options
	// TargetAuth handles `auth:` blocks of target steps, by the target URI's scheme
	// (pkg/app installs the mcp:// client's); a scheme without a handler refuses
	// auth:. Set it before building.
	TargetAuth map[string]TargetAuthHandler
	// Agents builds `agent:` steps; nil (no LLM runtime installed) makes them an
	// error. pkg/app installs it.
	Agents AgentBuilder
	// ToolOutput is the output schema of the `tools:` entry being built (nil while
	// building a workflow): an `agent:` step inside it answers in that JSON.
	ToolOutput json.RawMessage

	// values are what the step kinds of a module need from the application (the
	// RAG module's pipelines …), set by the module's own setter (see SetValue).
	values map[any]any

	errs     config.Errors
	warnings config.Errors
	steps    int

	// next is the rest of the step list being built by BuildSteps and consumed how
	// many of its steps the current builder took over (see Peek and Consume).
	next     []config.StepConfig
	consumed int

	// leading is true while every top-level step built so far in the
	// workflow asks before the task (elicit: before_task), which only
	// such leading steps may.
	leading bool

	depth      int             // nesting of BuildSteps calls; 0 between workflows
	vars       map[string]bool // variables set by the enrich steps built so far in this workflow
	enrichVars map[string]bool // … in any workflow
	nameChecks []nameCheck     // scripts whose names are checked once every workflow is built
}

// SetValue attaches to the build context a value the step kinds of one module need
// from the application — the RAG module's pipelines, say — so that this package
// knows no module. Like context.WithValue, key should be a value of an unexported
// type of that module, which wraps SetValue and Value in typed functions
// (ragstep.SetPipelines).
func (bc *BuildContext) SetValue(key, value any) {
	if bc.values == nil {
		bc.values = map[any]any{}
	}
	bc.values[key] = value
}

// Value returns what SetValue attached under key, nil when nothing was.
func (bc *BuildContext) Value(key any) any { return bc.values[key] }

// Peek returns the step that follows the one being built in its step list, if any.
// A builder whose step absorbs its successor (multicast absorbs the aggregate right
// after it, so the two run as one processor) peeks at it and calls Consume.
func (bc *BuildContext) Peek() (config.StepConfig, bool) {
	if bc.consumed >= len(bc.next) {
		return config.StepConfig{}, false
	}
	return bc.next[bc.consumed], true
}

// Consume marks the step returned by Peek as built by the current builder, so that
// BuildSteps skips it.
func (bc *BuildContext) Consume() {
	if bc.consumed < len(bc.next) {
		bc.consumed++
	}
}

// NewBuildContext returns a build context for hc.
func NewBuildContext(hc *engine.Context) *BuildContext { return &BuildContext{HC: hc} }

// Errorf records an error at pos/path and returns it so that the caller can add a Hint.
func (bc *BuildContext) Errorf(pos config.Pos, path, format string, args ...any) *config.Error {
	e := &config.Error{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)}
	bc.errs = append(bc.errs, e)
	return e
}

// Add records errors.
func (bc *BuildContext) Add(errs ...*config.Error) { bc.errs = append(bc.errs, errs...) }

// Errors returns every error recorded so far. It first completes the checks that
// need every workflow built: names read by scripts (see checkNames).
func (bc *BuildContext) Errors() config.Errors {
	bc.finishNameChecks()
	return bc.errs
}

// Warnings returns the non-fatal findings of the steps built so far (a key written
// in its former spelling …), for the caller to show beside the configuration's own.
func (bc *BuildContext) Warnings() config.Errors { return bc.warnings }

// Decoder returns a fresh strict decoder for the step's file; its errors come back
// through the builder's return value (decoder.Err()).
func (bc *BuildContext) Decoder(s config.StepConfig) *config.Decoder {
	return config.NewDecoder(s.Pos.File)
}

// Name is the step name engine.Named processors report: "helix.yaml:14:9 transform".
func Name(s config.StepConfig) string { return s.Pos.String() + " " + s.Kind }

// Build builds one step, recording its errors; nil means it could not be built.
func Build(bc *BuildContext, s config.StepConfig) engine.Processor {
	bc.steps++
	if bc.steps == maxSteps {
		bc.Errorf(s.Pos, s.Path, "more than %d steps: is a YAML alias nesting step lists into themselves?", maxSteps)
	}
	if bc.steps >= maxSteps {
		return nil
	}
	b, ok := lookup(s.Kind)
	if !ok {
		e := bc.Errorf(s.Pos, s.Path, "unknown step %q", s.Kind)
		e.Hint = config.DidYouMean(s.Kind, Kinds())
		if e.Hint == "" {
			e.Hint = "known steps: " + strings.Join(Kinds(), ", ")
		}
		return nil
	}
	p, err := b(bc, s)
	if err != nil {
		bc.Add(config.AsErrors(err, s.Pos, s.Path)...)
		return nil
	}
	return p
}

// BuildSteps builds a step list in order. Steps that fail are left out (their errors
// are recorded), so the result is only meant to run when bc has no errors.
func BuildSteps(bc *BuildContext, steps []config.StepConfig) []engine.Processor {
	// Builders of composite steps call BuildSteps for their nested lists: keep the
	// enclosing list's lookahead intact for them.
	savedNext, savedConsumed := bc.next, bc.consumed
	top := bc.depth == 0
	if top {
		bc.vars = map[string]bool{} // a new workflow: no variables yet
		bc.leading = true
	}
	bc.depth++
	defer func() { bc.next, bc.consumed = savedNext, savedConsumed; bc.depth-- }()
	out := make([]engine.Processor, 0, len(steps))
	for i := 0; i < len(steps); i++ {
		bc.next, bc.consumed = steps[i+1:], 0
		p := Build(bc, steps[i])
		if p != nil {
			out = append(out, p)
		}
		if top {
			if b, ok := p.(*elicitStep); !ok || !b.beforeTask {
				bc.leading = false
			}
		}
		i += bc.consumed
	}
	return out
}
