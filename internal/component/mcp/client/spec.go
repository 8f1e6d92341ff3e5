package client

import (
	"strconv"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// Spec is the mcp:// component's description: options, headers, direction.
var Spec = &component.Spec{
	Scheme:    Scheme,
	Summary:   "call a tool on an MCP server",
	Direction: component.ProducerOnly,
	Syntax:    "mcp://server-address/tool[?options]",
	Description: `A target that calls one tool of a Model Context Protocol server and makes its
result the body. The address and path are split at the last /: everything before is the
server's address, the last segment the tool. One session per server is shared by the
endpoints that use it and opened on first use. The body becomes the tool's arguments: a
map as it is, JSON text decoded (else {"input": text}), nil as {}. The result is the text
content, else the structured content. A tool error (isError) fails the exchange unless
throwExceptionOnFailure=false. Credentials (bearer, API key, OAuth2 client credentials,
mTLS) go in the target's auth: block, not in the URI; see docs/mcp-client.md.`,
	Path: []component.PathPart{
		{Name: "server-address", Required: true, Description: "host:port (optionally with a path) for http and sse; the server executable for stdio (mcp:///usr/local/bin/mcp-fs/read_file?transport=stdio)"},
		{Name: "tool", Description: "the tool to call; may be left out when every exchange names it in HelixMcpToolName"},
	},
	Options: []component.Option{
		{Name: "transport", Type: component.TypeEnum, Default: TransportHTTP, Enum: []string{TransportHTTP, TransportSSE, TransportStdio}, Role: component.ProducerOnly, Since: "0.1",
			Description: "http: Streamable HTTP (a bare host:port is looked for at /mcp, then /); sse: the 2024-11-05 SSE transport (http://addr/sse); stdio: start the executable and speak over its stdin/stdout"},
		{Name: "scheme", Type: component.TypeEnum, Enum: []string{"http", "https"}, Role: component.ProducerOnly, Since: "0.1",
			Description: "http or https, for the http and sse transports; default http (https with mTLS auth)"},
		{Name: "timeout", Type: component.TypeDuration, Default: DefaultCallTimeout.String(), Role: component.ProducerOnly, Since: "0.1",
			Description: "limit of each call, connecting included; 0 means none"},
		{Name: "args", Type: component.TypeString, Multiple: true, Role: component.ProducerOnly, Since: "0.1",
			Description: "stdio: one argument of the command per args=, in order"},
		{Name: "env", Type: component.TypeString, Multiple: true, Secret: true, Role: component.ProducerOnly, Since: "0.1",
			Description: "stdio: NAME=value added to the command's environment, repeatable; values are often credentials"},
		{Name: "maxResponseBytes", Type: component.TypeInt, Default: strconv.Itoa(DefaultMaxResponseBytes), Role: component.ProducerOnly, Since: "0.2",
			Description: "size limit in bytes of one answer of the server (64 MiB): an HTTP response body, an SSE event, a stdio message; a larger answer fails the call"},
		{Name: "protocolVersion", Type: component.TypeEnum, Enum: ProtocolVersions, Role: component.ProducerOnly, Since: "0.2",
			Description: "pin the MCP protocol version; default: the newest the server speaks (server/discover, else initialize). 2026-07-28 accepts no older server; an older version skips server/discover"},
		{Name: "onElicit", Type: component.TypeEnum, Default: AnswerRefuse, Enum: ElicitPolicies, Role: component.ProducerOnly, Since: "0.2",
			Description: "how the server's elicitation requests are answered: refuse (an error telling the server what to set), defaults (accept with the form's defaults; decline when a required field has none) or forward (ask Helix's own MCP caller)"},
		{Name: "onSample", Type: component.TypeString, Default: AnswerRefuse, Role: component.ProducerOnly, Since: "0.2",
			Description: "how the server's sampling requests are answered: refuse, forward (ask Helix's own MCP caller's model) or agent:<id> (the model of that agent of agents:)"},
		{Name: "throwExceptionOnFailure", Type: component.TypeBool, Default: "true", Role: component.ProducerOnly, Since: "0.1",
			Description: "a tool error fails the exchange; with false the workflow goes on and tests HelixMcpIsError"},
	},
	Headers: []component.Header{
		{Name: exchange.HeaderMcpToolName, Type: "string", Use: component.ReadsWrites, Role: component.ProducerOnly,
			Description: "read: the tool to call instead of the URI's; written: the tool called"},
		{Name: exchange.HeaderMcpIsError, Type: "string", Use: component.Writes, Role: component.ProducerOnly,
			Description: "\"true\" when the tool reported an error, else \"false\""},
	},
	Examples: []component.Example{
		{URI: "mcp://localhost:8181/search", Description: "call search on a Streamable HTTP server"},
		{URI: "mcp:///usr/local/bin/mcp-fs/read_file?transport=stdio", Description: "start a stdio server and call read_file"},
		{URI: "mcp://api.vendor.com:443/mcp/lookup?scheme=https&timeout=10s", Description: "over HTTPS, at most ten seconds per call"},
	},
	Since: "0.1",
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
