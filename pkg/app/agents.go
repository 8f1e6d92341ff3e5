package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/arvenza/helix/internal/agent/setup"
	agentcomp "github.com/arvenza/helix/internal/component/agent"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// agentInputSchema is what an agent takes as a tool: a message and, to continue a
// conversation, a session id.
var agentInputSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"What to ask the agent"},"session_id":{"type":"string","description":"Continue the conversation of this session"}},"required":["message"]}`)

// builtAgent is an `agents:` entry with its runner.
type builtAgent struct {
	cfg    config.AgentConfig
	path   string
	runner *setup.Runner
}

// agentDeps are what the application gives every agent.
func (a *App) agentDeps() setup.Deps {
	return setup.Deps{Logger: a.logger, Agents: a.agentSampler}
}

// agentComponent is the app's agent:// component.
func (a *App) agentComponent() *agentcomp.Component {
	c, _ := a.hc.Component(agentcomp.Scheme)
	ac, _ := c.(*agentcomp.Component)
	return ac
}

// prepareAgents declares the agents (so that agent:// targets naming them
// validate) and builds their runners, before any workflow: `agent:` steps refer to
// them. Their catalogue tools are resolved later (resolveAgents), once every
// workflow, tool and agent is registered.
func (a *App) prepareAgents() {
	a.bc.Agents = agentSteps{a}
	comp := a.agentComponent()
	ids := make([]string, 0, len(a.cfg.Agents))
	for _, ag := range a.cfg.Agents {
		ids = append(ids, ag.ID)
	}
	if comp != nil {
		comp.Declare(ids...)
	}
	a.agentByID = map[string]*builtAgent{}
	if mc, err := mcpclient.ComponentOf(a.hc); err == nil {
		// onSample=agent:<id> on mcp:// targets: that agent's model answers.
		mc.SetAgents(a.agentSampler)
	}
	for i, ag := range a.cfg.Agents {
		path := ag.Path
		if path == "" {
			path = config.IndexPath("agents", i)
		}
		if ag.Model.Node == nil {
			ag.Model = a.defaultModel(ag, path)
		}
		r, errs := setup.Build(ag, path, a.agentDeps())
		a.errs = append(a.errs, errs...)
		if r != nil {
			a.cfg.Warnings = append(a.cfg.Warnings, r.Warnings()...)
		}
		if r == nil {
			continue
		}
		// A runner with errors is kept: its tools are still resolved (more errors
		// in one validation) and the app, having errors, never starts.
		b := &builtAgent{cfg: ag, path: path, runner: r}
		a.agents = append(a.agents, b)
		a.agentByID[ag.ID] = b
		a.runners = append(a.runners, r)
	}
}

// defaultModel is the model of an agent written without model: (the spec's §4.7
// examples show only an agent's tools): OpenAI's API — or the OpenAI-compatible
// server OPENAI_BASE_URL names, which the SDK reads — with the model OPENAI_MODEL
// names, else setup.DefaultOpenAIModel. A warning says so, since a forgotten
// model: block would otherwise go unnoticed.
func (a *App) defaultModel(ag config.AgentConfig, path string) config.ModelConfig {
	m := config.ModelConfig{Provider: setup.ProviderOpenAI, Model: os.Getenv("OPENAI_MODEL"), Pos: ag.Pos}
	if m.Model == "" {
		m.Model = setup.DefaultOpenAIModel
	}
	a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: ag.Pos, Path: path,
		Msg:  fmt.Sprintf("agent %q has no model: it uses %s model %s", ag.ID, m.Provider, m.Model),
		Hint: "add model: {provider: openai|anthropic, model: …} (OPENAI_MODEL and OPENAI_BASE_URL change the default)"})
	return m
}

// buildAgentWorkflows makes each agent an engine workflow (Kind agent) triggered
// by its trigger, or by agent://id, whose one processor runs it: per-workflow
// metrics, MCP exposure, expose lists and the manifest then treat agents like
// every other workflow.
func (a *App) buildAgentWorkflows(triggers map[string]config.Pos) []*engine.Workflow {
	var out []*engine.Workflow
	validate, err := newValidator(agentInputSchema)
	if err != nil {
		panic(err) // a constant schema
	}
	for _, b := range a.agents {
		ag := b.cfg
		var wf *engine.Workflow
		if ag.Trigger != "" {
			// A trigger of its own is checked like a workflow's (scheme, role,
			// duplicates); the steps are the agent.
			wf = a.buildWorkflow(config.WorkflowConfig{ID: ag.ID, Description: ag.Description, From: ag.Trigger,
				FromRaw: ag.TriggerRaw, FromPos: ag.TriggerPos, Pos: ag.Pos, Path: b.path}, triggers)
		} else {
			wf = &engine.Workflow{ID: ag.ID, Description: ag.Description, FromURI: agentcomp.Scheme + "://" + ag.ID, Source: ag.Pos.String()}
		}
		wf.Kind = engine.KindAgent
		wf.InputSchema = agentInputSchema
		wf.ValidateInput = validate
		wf.Processors = []engine.Processor{b.runner}
		if wf.Description == "" {
			wf.Description = "Helix agent: " + ag.ID
		}
		out = append(out, wf)
	}
	return out
}

// resolveAgents resolves the catalogue tools of every agent (inline ones
// included) against the application's one catalogue, and hands the agents with
// MCP servers to the agent component, which starts and stops them with the app.
func (a *App) resolveAgents(cat *tool.Catalogue) {
	comp := a.agentComponent()
	for _, r := range a.runners {
		a.errs = append(a.errs, r.Resolve(cat)...)
		if r.HasServices() && comp != nil {
			comp.AddService(r)
		}
	}
}

// agentSteps builds the app's `agent:` steps (the step.AgentBuilder it installs).
type agentSteps struct{ a *App }

// BuildAgentStep builds an `agent:` step: the agents: entry cfg.Ref, or the inline
// agent cfg. Inside a tools: entry with output fields the agent answers in the
// tool's output schema, unless the step has its own output.
func (as agentSteps) BuildAgentStep(bc *step.BuildContext, s config.StepConfig, cfg config.AgentConfig) (engine.Processor, error) {
	a := as.a
	var r *setup.Runner
	if cfg.Ref != "" {
		b, ok := a.agentByID[cfg.Ref]
		if !ok {
			known := make([]string, 0, len(a.agentByID))
			for k := range a.agentByID {
				known = append(known, k)
			}
			sort.Strings(known)
			e := &config.Error{Pos: cfg.Pos, Path: cfg.Path, Msg: fmt.Sprintf("agent step: no agent with id %q", cfg.Ref)}
			if e.Hint = config.DidYouMean(cfg.Ref, known); e.Hint == "" {
				e.Hint = "name an entry of agents:, or write the agent inline (model:, system_prompt: …)"
			}
			return nil, e
		}
		r = b.runner
	} else {
		// Inline agents are named after their workflow in errors and /metrics.
		cfg.ID = bc.Workflow + "/agent"
		path := cfg.Path
		if path == "" {
			path = config.KeyPath(s.Path, s.Kind)
		}
		built, errs := setup.Build(cfg, path, a.agentDeps())
		if built != nil {
			a.runners = append(a.runners, built) // resolved later, even with errors
		}
		if len(errs) > 0 {
			return nil, errs
		}
		r = built
		if len(cfg.Output) > 0 {
			r = r.WithOutput(config.ToolConfig{Output: cfg.Output}.OutputSchema())
		}
	}
	if len(bc.ToolOutput) > 0 && len(cfg.Output) == 0 {
		r = r.WithOutput(bc.ToolOutput)
	}
	return namedProcessor{name: step.Name(s), p: r.StepProcessor()}, nil
}

// namedProcessor names a step's processor in errors and logs.
type namedProcessor struct {
	name string
	p    engine.Processor
}

func (n namedProcessor) Name() string { return n.name }

// Journaled passes on whether the step checkpoints its own parts in a durable
// run (an agent: each model turn and tool result; durable.Journaled).
func (n namedProcessor) Journaled() bool {
	j, ok := n.p.(durable.Journaled)
	return ok && j.Journaled()
}

func (n namedProcessor) Process(ctx context.Context, ex *exchange.Exchange) error {
	return n.p.Process(ctx, ex)
}

// manifestAgents describes the agents: entries for the manifest (never a key).
func (a *App) manifestAgents() []management.Agent {
	out := make([]management.Agent, 0, len(a.agents))
	for _, b := range a.agents {
		d := b.runner.Describe()
		out = append(out, management.Agent{ID: d.ID, Type: d.Type, Provider: d.Provider, Model: d.Model,
			Tools: d.Tools, Capabilities: d.Capabilities})
	}
	return out
}

// agentMetrics are the per-agent counters of /metrics: agents: entries by id,
// inline `agent:` steps by "<workflow>/agent" (summed when a workflow has several).
func (a *App) agentMetrics() []management.AgentMetrics {
	byID := map[string]*management.AgentMetrics{}
	var order []string
	for _, r := range a.runners {
		st := r.Stats()
		m, ok := byID[r.ID()]
		if !ok {
			m = &management.AgentMetrics{Agent: r.ID()}
			byID[r.ID()] = m
			order = append(order, r.ID())
		}
		m.Runs += st.Runs
		m.Errors += st.Errors
		m.Iterations += st.Iterations
		m.ToolCalls += st.ToolCalls
		m.InputTokens += st.InputTokens
		m.OutputTokens += st.OutputTokens
	}
	out := make([]management.AgentMetrics, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out
}

// agentSampler is the model of agent id as an answerer of MCP servers' sampling
// requests (onSample=agent:<id>), and whether agents: declares id. The model is
// nil while the agent is not built yet (prepareAgents builds them in order) or
// when its configuration has errors.
func (a *App) agentSampler(id string) (mcpclient.Sampler, bool) {
	declared := false
	for _, ag := range a.cfg.Agents {
		declared = declared || ag.ID == id
	}
	b, ok := a.agentByID[id]
	if !ok || b.runner == nil {
		return nil, declared
	}
	return b.runner.Sampler(), declared
}
