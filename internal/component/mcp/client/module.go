package client

import (
	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/pkg/component"
)

// The application builds and adds this component itself, with wiring a module
// cannot see (pkg/app: helix.mcp.servers, mcps:, targets' auth: blocks); the
// module only puts its spec into the build. A target that forwards its server's
// questions asks the exchange's caller (answers.go).
func init() {
	component.Register(component.Module{Spec: Spec})
	ask.RegisterTargetAsker(Scheme, forwardsQuestions)
}
