// Package agent implements agent://id: the implicit trigger of agents (entries of
// `agents:` without a trigger of their own) and the target that runs an agent on
// the caller's exchange. The component itself is internal/component/implicit,
// shared with pipeline://; this package names the scheme, its spec and headers.
package agent

import (
	"github.com/arvenza/helix/internal/component/implicit"
	"github.com/arvenza/helix/pkg/engine"
)

// Scheme is the component's scheme.
const Scheme = "agent"

// Component is the agent:// component of one engine context.
type Component = implicit.Component

// New returns the agent component bound to hc; it knows no agent until the
// application declares them.
func New(hc *engine.Context) *Component {
	return implicit.New(hc, implicit.Kind{
		Scheme: Scheme, Noun: "agent", Kind: engine.KindAgent, Section: "agents:", Example: "assistant",
		Instead: "call the agent with target: agent://%[1]s, or give this workflow a direct:// trigger",
		Spec:    Spec,
	})
}
