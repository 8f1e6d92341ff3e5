package server

import "github.com/arvenza/helix/pkg/engine"

// Of returns the mcp-server component registered on hc, or nil. The public facade
// (pkg/component/mcp) wraps the component, so an app's component is reached this
// way by Helix's own code (the CLI's listings, tests).
func Of(hc *engine.Context) *Component {
	c, _ := hc.Component(Scheme)
	sc, _ := c.(*Component)
	return sc
}
