package mcp

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// Server side: what a Go program needs to serve its workflows as MCP tools.
type (
	// ServerComponent is the mcp-server component; register it with
	// h.AddComponent(ServerScheme, NewServer(h)).
	ServerComponent = server.Component
	// ServerOptions configure one MCP server (ServerComponent.AddServer) or the
	// tools of an SDK server (NewSDKServer). Name and Version are what clients see.
	ServerOptions = server.Options
	// ToolOverride replaces the description or input schema of one workflow's tool
	// (ServerOptions.Tools, keyed by workflow id).
	ToolOverride = server.ToolOverride
)

// Server side: the scheme and the transports of ServerOptions.Transport.
const (
	ServerScheme   = server.Scheme
	TransportHTTP  = server.TransportHTTP
	TransportSSE   = server.TransportSSE
	TransportStdio = server.TransportStdio
)

// NewServer returns the mcp-server component for hc; register it with
// hc.AddComponent("mcp-server", NewServer(hc)). It has no side effects until Start.
func NewServer(hc *engine.Context) *ServerComponent { return server.New(hc) }

// NewSDKServer builds a go-sdk server offering hc's workflows as tools (and the
// helix://workflows resource), as a Helix server with opts would, so a program can
// serve them on any go-sdk transport (in-memory transports in tests, for example).
func NewSDKServer(hc *engine.Context, opts ServerOptions) (*sdk.Server, error) {
	return server.NewSDKServer(hc, opts)
}

// SanitizeToolName turns a workflow id into its tool name ("api.v2-users" →
// "api_v2_users").
func SanitizeToolName(id string) string { return tool.SanitizeName(id) }

// Client side: the mcp:// component, which calls tools of other MCP servers.
type (
	// ClientComponent is the mcp:// component; register it with
	// h.AddComponent(ClientScheme, NewClient()).
	ClientComponent = client.Component
	// ToolError is a tool call that the server answered with an error (isError, or
	// a JSON-RPC error when Protocol is set); errors.As finds it in a failed
	// exchange's error.
	ToolError = client.ToolError
)

// ClientScheme is the scheme of the mcp:// component.
const ClientScheme = client.Scheme

// NewClient returns an mcp:// component. It connects to a server on the first call
// to one of its tools, not at start.
func NewClient() *ClientComponent { return client.New() }
