package tool

import "github.com/arvenza/helix/pkg/component"

// Spec is the tool:// component's description.
var Spec = &component.Spec{
	Scheme:    "tool",
	Summary:   "a tools: entry, called with input validation",
	Direction: component.Both,
	Syntax:    "tool://id",
	Description: `Every entry under tools: has the implicit trigger tool://id; MCP servers
invoke it. As a target, tool://id validates the body against the tool's input schema
(filling in defaults) exactly as an MCP call would, then runs the tool on the caller's
exchange, the way direct:// chains workflows.`,
	Path: []component.PathPart{
		{Name: "id", Required: true, Description: "the id of the tools: entry"},
	},
	Examples: []component.Example{
		{URI: "tool://calculate_tax", Description: "call the tool calculate_tax from a workflow"},
	},
	Since: "0.1",
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
