package server

import (
	"strconv"

	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// Spec is the mcp-server:// component's description: options, headers, direction.
// The same settings exist as YAML keys of helix.mcp.servers and mcps: entries
// (snake_case there, camelCase here: fast_tool_calls is fastToolCalls).
var Spec = &component.Spec{
	Scheme:    Scheme,
	Summary:   "expose the workflows as tools of an MCP server",
	Direction: component.ConsumerOnly,
	Syntax:    "mcp-server://host:port[?options]",
	Description: `A trigger that runs a Model Context Protocol server on host:port (Streamable HTTP
at /mcp and /, SSE at /sse + /message) or on stdin/stdout (transport=stdio). Every workflow
with a trigger and every tools: entry becomes a tool, its name sanitized (process-order →
process_order). The server workflow's own steps never run: it only carries the trigger,
and it is never itself a tool. The same server can be declared in YAML under
helix.mcp.servers or mcps:, with security settings (API keys, rate limits, CORS, tool
filters, OAuth) that a URI cannot carry; see docs/mcp-server.md.`,
	Path: []component.PathPart{
		{Name: "host:port", Description: "the address to listen on (0.0.0.0:3000 for every interface); ignored with transport=stdio"},
	},
	Options: append([]component.Option{
		{Name: "transport", Type: component.TypeEnum, Default: TransportHTTP, Enum: []string{TransportHTTP, TransportSSE, TransportStdio}, Role: component.ConsumerOnly, Since: "0.1",
			Description: "http: Streamable HTTP (and SSE); sse: the 2024-11-05 SSE transport only; stdio: JSON-RPC lines on stdin/stdout, for AI clients that start Helix"},
		{Name: "name", Type: component.TypeString, Default: DefaultServerName, Role: component.ConsumerOnly, Since: "0.1",
			Description: "the server name clients see (serverInfo.name)"},
		{Name: "version", Type: component.TypeString, Default: DefaultServerVersion, Role: component.ConsumerOnly, Since: "0.1",
			Description: "the server version clients see (serverInfo.version)"},
		{Name: "stateless", Type: component.TypeBool, Default: "false", Role: component.ConsumerOnly, Since: "0.1",
			Description: "serve every POST on its own, without sessions (MCP 2026-07-28; any number of replicas behind a plain load balancer)"},
		{Name: "sessionIdleTimeout", Type: component.TypeDuration, Default: DefaultSessionIdleTimeout.String(), Role: component.ConsumerOnly, Since: "0.1",
			Description: "a session without requests for this long is closed"},
		{Name: "httpTransport", Type: component.TypeEnum, Default: DefaultHTTPTransport, Enum: []string{HTTPTransportHelix, HTTPTransportSDK}, Role: component.ConsumerOnly, Since: "0.1",
			Description: "the Streamable HTTP implementation: Helix's own, or the go-sdk's StreamableHTTPHandler"},
		{Name: "fastToolCalls", Type: component.TypeBool, Default: "true", Role: component.ConsumerOnly, Since: "0.1",
			Description: "answer tools/call on established sessions without the go-sdk session machinery (same answers; YAML fast_tool_calls)"},
		{Name: "maxSessions", Type: component.TypeInt, Default: strconv.Itoa(DefaultMaxSessions), Role: component.ConsumerOnly, Since: "0.1",
			Description: "open sessions of the server; 0 means the default, -1 no limit"},
		{Name: "maxSessionsPerPrincipal", Type: component.TypeInt, Default: strconv.Itoa(DefaultMaxSessionsPerPrincipal), Role: component.ConsumerOnly, Since: "0.1",
			Description: "open sessions per API key or token subject; 0 means the default, -1 no limit"},
		{Name: "maxConcurrentCalls", Type: component.TypeInt, Default: strconv.Itoa(DefaultMaxConcurrentCalls), Role: component.ConsumerOnly, Since: "0.1",
			Description: "requests of one session running at once (a batch's calls, parallel POSTs); the others wait; 0 means the default, -1 no limit"},
	}, netguard.SpecOptions(component.ConsumerOnly)...),
	Headers: []component.Header{
		{Name: exchange.HeaderMcpToolName, Type: "string", Use: component.Writes, Role: component.ConsumerOnly, Description: "the name of the tool called"},
		{Name: exchange.HeaderMcpRouteID, Type: "string", Use: component.Writes, Role: component.ConsumerOnly, Description: "the id of the workflow or tool that runs"},
		{Name: exchange.HeaderMcpServerName, Type: "string", Use: component.Writes, Role: component.ConsumerOnly, Description: "the name of the server that received the call"},
	},
	Examples: []component.Example{
		{URI: "mcp-server://0.0.0.0:3000?transport=http&name=my-tools&version=1.0.0", Description: "the integration guide's server: every workflow as a tool on port 3000"},
		{URI: "mcp-server://127.0.0.1:3000?stateless=true", Description: "a stateless server, for replicas behind a load balancer"},
		{URI: "mcp-server://stdio?transport=stdio", Description: "serve on stdin/stdout (Claude Desktop starts helix mcp serve)"},
	},
	Since:          "0.1",
	FreshExchanges: true,
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
