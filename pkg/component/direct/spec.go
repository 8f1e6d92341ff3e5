package direct

import "github.com/arvenza/helix/pkg/component"

// Spec is the direct:// component's description.
var Spec = &component.Spec{
	Scheme:    "direct",
	Summary:   "synchronous in-process call of another workflow",
	Direction: component.Both,
	Syntax:    "direct://name",
	Description: `As a trigger, direct://name makes a workflow callable by name; as a target it
calls that workflow on the caller's goroutine with the caller's exchange, so the reply is
simply the body afterwards and an error in the called workflow is the caller's error.
Headers and variables travel with the exchange both ways. Two workflows cannot share one
name, and calling a name no workflow listens on is an error.`,
	Path: []component.PathPart{
		{Name: "name", Required: true, Description: "the name the workflow is called by"},
	},
	Examples: []component.Example{
		{URI: "direct://greet", Description: "trigger of a workflow called greet, or a target calling it"},
	},
	Since: "0.1",
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
