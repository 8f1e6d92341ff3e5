package step_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// recordingAgents is an AgentBuilder that records what it was asked to build.
type recordingAgents struct {
	cfgs    []config.AgentConfig
	outputs []json.RawMessage
}

func (r *recordingAgents) BuildAgentStep(bc *step.BuildContext, s config.StepConfig, cfg config.AgentConfig) (engine.Processor, error) {
	r.cfgs = append(r.cfgs, cfg)
	r.outputs = append(r.outputs, bc.ToolOutput)
	return engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody("agent " + cfg.Ref)
		return nil
	}), nil
}

func buildAgentSteps(t *testing.T, agents step.AgentBuilder, toolOutput json.RawMessage, steps string) config.Errors {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte("workflows:\n  - id: w\n    trigger: direct://w\n    steps:\n"+steps))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	bc := step.NewBuildContext(engine.NewContext("test"))
	bc.Agents, bc.ToolOutput = agents, toolOutput
	step.BuildSteps(bc, cfg.Workflows[0].Steps)
	return bc.Errors()
}

// The agent: step hands its decoded value (an id, {ref: id} or an inline agent)
// and the enclosing tool's output schema to the builder the application installed.
func TestAgentStepDelegatesToTheInstalledBuilder(t *testing.T) {
	rec := &recordingAgents{}
	out := json.RawMessage(`{"type":"object"}`)
	errs := buildAgentSteps(t, rec, out, `      - agent: assistant
      - agent: {ref: helper}
      - agent:
          model: {provider: openai, model: gpt-4o}
          system_prompt: "Be brief."
          tools: [search]
`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(rec.cfgs) != 3 || rec.cfgs[0].Ref != "assistant" || rec.cfgs[1].Ref != "helper" {
		t.Fatalf("built %+v", rec.cfgs)
	}
	inline := rec.cfgs[2]
	if inline.Ref != "" || inline.Model.Provider != "openai" || inline.SystemPrompt != "Be brief." || len(inline.Tools) != 1 || inline.Tools[0].Name != "search" {
		t.Errorf("inline agent %+v", inline)
	}
	if string(rec.outputs[2]) != string(out) {
		t.Errorf("tool output %s", rec.outputs[2])
	}
}

// Without an installed builder (a program embedding the engine without the LLM
// runtime) the step is refused at its position; decoding problems come first.
func TestAgentStepWithoutRuntime(t *testing.T) {
	errs := buildAgentSteps(t, nil, nil, "      - agent: assistant\n")
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "helix.yaml:5:9: workflows[0].steps[0]: step agent is not available in this build") {
		t.Errorf("errors %v", errs)
	}
	errs = buildAgentSteps(t, &recordingAgents{}, nil, "      - agent: {system_prompt: x}\n")
	if len(errs) == 0 || !strings.Contains(errs.Error(), "an inline agent needs model:") {
		t.Errorf("errors %v", errs)
	}
}
