package agent

import "github.com/arvenza/helix/pkg/component"

// Exchange headers an agent run writes (and HeaderSessionID, which it reads).
const (
	// HeaderSessionID names the conversation an exchange continues; a body's
	// session_id wins over it.
	HeaderSessionID = "HelixAgentSessionId"
	// HeaderIterations is how many model turns the run took.
	HeaderIterations = "HelixAgentIterations"
	// HeaderToolCalls is how many tool calls the run made.
	HeaderToolCalls = "HelixAgentToolCalls"
	// HeaderInputTokens and HeaderOutputTokens are the tokens the run cost, as the
	// provider counted them.
	HeaderInputTokens  = "HelixAgentInputTokens"
	HeaderOutputTokens = "HelixAgentOutputTokens"
)

// Spec is the agent:// component's description.
var Spec = &component.Spec{
	Scheme:    "agent",
	Summary:   "an agents: entry, run on the exchange",
	Direction: component.Both,
	Syntax:    "agent://id",
	Description: `Every entry under agents: without a trigger of its own has the implicit trigger
agent://id, through which MCP servers and other agents call it; a workflow cannot use
agent:// as its trigger. As a target, agent://id runs the agent on the caller's exchange:
the body is the message (a JSON object {message, session_id} or any text), the answer
becomes the body (text, or JSON when the agent answers to an output schema) and the run's
counts are written as headers. A failed run is the exchange's error.`,
	Path: []component.PathPart{
		{Name: "id", Required: true, Description: "the id of the agents: entry"},
	},
	Headers: []component.Header{
		{Name: HeaderSessionID, Type: "string", Use: component.Reads, Role: component.Both,
			Description: "the session whose conversation memory the run continues, when the body has no session_id"},
		{Name: HeaderIterations, Type: "int", Use: component.Writes, Role: component.Both,
			Description: "model turns the run took"},
		{Name: HeaderToolCalls, Type: "int", Use: component.Writes, Role: component.Both,
			Description: "tool calls the run made"},
		{Name: HeaderInputTokens, Type: "int", Use: component.Writes, Role: component.Both,
			Description: "input tokens the run cost"},
		{Name: HeaderOutputTokens, Type: "int", Use: component.Writes, Role: component.Both,
			Description: "output tokens the run cost"},
	},
	Examples: []component.Example{
		{URI: "agent://assistant", Description: "ask the agent assistant with the body as the message"},
	},
	Since: "0.1",
}
