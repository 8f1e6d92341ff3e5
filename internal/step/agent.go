package step

import (
	"fmt"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
)

// AgentBuilder builds the processor of an `agent:` step from its decoded value
// (cfg.Ref names an agents: entry, or cfg is an inline agent). pkg/app installs one
// in [BuildContext.Agents]: building an agent needs the LLM runtime (providers, MCP
// clients), which this package does not depend on. It returns its problems as
// config errors with positions and must have no side effects.
type AgentBuilder interface {
	BuildAgentStep(bc *BuildContext, s config.StepConfig, cfg config.AgentConfig) (engine.Processor, error)
}

func init() {
	Define(Kind{
		Name: "agent",
		Description: "Asks an LLM agent: the body (as text; JSON stays JSON) is the message and the answer becomes the body. " +
			"The value is the id of an agents: entry, or an inline agent (model, system_prompt, tools …). Inside a tools: entry " +
			"with output fields the agent answers in that JSON (validated), with Content-Type application/json.",
		Shape: config.AgentStepShape(),
		Build: func(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
			cfg, ok := config.AgentFromStep(d, v)
			if !ok || d.Err() != nil {
				return nil, d.Err()
			}
			if bc.Agents == nil {
				return nil, &config.Error{Pos: s.Pos, Path: s.Path,
					Msg: fmt.Sprintf("step %s is not available in this build", s.Kind), Hint: "agents need the LLM runtime, which this program did not install"}
			}
			return bc.Agents.BuildAgentStep(bc, s, cfg)
		},
	})
}
