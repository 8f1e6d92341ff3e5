package all

import "github.com/arvenza/helix/pkg/component"

// The MCP components are being split into role packages (pkg/component/mcp/client,
// pkg/component/mcp/server); until their spec.go files exist, these entries keep the
// schemes listed with their direction. Their options are documented in
// docs/mcp-client.md and docs/mcp-server.md.
var (
	mcpClientSpec = &component.Spec{
		Scheme:    "mcp",
		Summary:   "call a tool on an MCP server",
		Direction: component.ProducerOnly,
		Syntax:    "mcp://host:port/tool[?options]",
		Description: "The path is split at the last /: everything before is the server's address " +
			"(host:port, or an executable for transport=stdio), the last segment the tool.",
		OpenOptions: "transport, timeout, auth and the other options are described in docs/mcp-client.md",
		Since:       "0.1",
	}
	mcpServerSpec = &component.Spec{
		Scheme:      "mcp-server",
		Summary:     "expose the workflows as tools of an MCP server",
		Direction:   component.ConsumerOnly,
		Syntax:      "mcp-server://host:port[?options]",
		OpenOptions: "transport, name, version, stateless and the other options are described in docs/mcp-server.md",
		Since:       "0.1",
	}
)
