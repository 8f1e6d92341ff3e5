// Package config is the public face of Helix's YAML model: the types a Go program
// fills to build Helix without a YAML file (see [github.com/arvenza/helix/pkg/app])
// and the loaders that read helix.yaml into them. The decoding, validation and
// schema machinery behind them is internal; these names are aliases of its model
// types, so a value loaded from YAML and one built in Go are the same type.
//
// docs/go-api.md shows how an embedding program uses them.
package config

import internal "github.com/arvenza/helix/internal/config"

// Config is a whole configuration: the helix: settings and every workflow, tool,
// agent, pipeline, MCP server, resource, prompt and test.
type Config = internal.Config

// HelixConfig holds the helix: settings.
type HelixConfig = internal.HelixConfig

// MCPSection holds helix.mcp: the MCP servers Helix serves.
type MCPSection = internal.MCPSection

// MCPServerConfig is one MCP server Helix serves (helix.mcp.servers[] or mcps:).
type MCPServerConfig = internal.MCPServerConfig

// WorkflowConfig is one workflow: a trigger URI and its steps.
type WorkflowConfig = internal.WorkflowConfig

// StepConfig is one step of a workflow.
type StepConfig = internal.StepConfig

// ToolConfig is one tool declared under tools:.
type ToolConfig = internal.ToolConfig

// Pos is a position in a YAML file (file, line, column), carried by every
// configuration error.
type Pos = internal.Pos

// Error is one configuration problem at a position, with a hint saying what to do.
type Error = internal.Error

// Errors are every problem of a configuration; Load returns them as one error.
type Errors = internal.Errors

// Load reads, merges and validates YAML configuration files, in order.
func Load(files ...string) (*Config, error) { return internal.Load(files...) }

// LoadBytes reads one configuration from memory; name is used in error positions.
func LoadBytes(name string, data []byte) (*Config, error) { return internal.LoadBytes(name, data) }
