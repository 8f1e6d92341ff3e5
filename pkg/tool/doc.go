// Package tool is Helix's tool catalogue: what workflows, `tools:` entries and (next)
// agents and pipelines offer to callers that are not workflows — MCP clients through
// an MCP server, and agents. It knows nothing of MCP's wire protocol.
package tool
