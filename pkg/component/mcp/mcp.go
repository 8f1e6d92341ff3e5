package mcp

import (
	"context"
	"net"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/uri"
)

// ServerComponent is the mcp-server component. Register it on an engine context
// with h.AddComponent(ServerScheme, NewServer(h)); servers are declared by
// mcp-server:// triggers or by AddServer. It wraps Helix's own server component,
// keeping the methods Helix uses for its wiring (catalogues, listings, shutdown)
// out of the public API.
type ServerComponent struct{ impl *server.Component }

// ServerOptions configure one MCP server (ServerComponent.AddServer) or the tools
// of an SDK server (NewSDKServer). The zero value is a server on DefaultAddr over
// HTTP named "helix-mcp", exposing every workflow with a trigger.
type ServerOptions struct {
	// ID names a declared server for Addr; it defaults to Name.
	ID string
	// Name and Version are what clients see in the initialize result.
	Name, Version string
	// Transport is TransportHTTP (the default), TransportSSE or TransportStdio.
	Transport string
	// Addr is host:port to listen on; port 0 picks a free port (see Addr).
	Addr string
	// Expose lists the workflow ids served as tools; nil serves every workflow
	// with a trigger, an empty list none.
	Expose []string
	// Tools replaces the description or input schema of a workflow's tool, keyed
	// by workflow id.
	Tools map[string]ToolOverride
	// Stateless serves every HTTP request on its own, without sessions.
	Stateless bool
	// SessionIdleTimeout closes sessions idle this long (0: the default).
	SessionIdleTimeout time.Duration
}

// ToolOverride replaces the description or input schema (a JSON Schema) of one
// workflow's tool.
type ToolOverride = server.ToolOverride

// Server side: the scheme, the transports of ServerOptions.Transport and the
// address a server without one listens on.
const (
	ServerScheme   = server.Scheme
	TransportHTTP  = server.TransportHTTP
	TransportSSE   = server.TransportSSE
	TransportStdio = server.TransportStdio
	DefaultAddr    = server.DefaultAddr
)

// NewServer returns the mcp-server component for hc; register it with
// hc.AddComponent("mcp-server", NewServer(hc)). It has no side effects until Start.
func NewServer(hc *engine.Context) *ServerComponent {
	return &ServerComponent{impl: server.New(hc)}
}

// AddServer declares a server, started with the component (helix.yaml's
// helix.mcp.servers does the same). Options that make no sense are an error here.
func (c *ServerComponent) AddServer(opts ServerOptions) error {
	return c.impl.AddServer(opts.internal())
}

// Addr is the address the server id listens on while it runs (the actual port when
// it asked for port 0), or nil. A server declared by an mcp-server:// trigger is
// known by its URI without options ("mcp-server://127.0.0.1:0").
func (c *ServerComponent) Addr(id string) net.Addr { return c.impl.Addr(id) }

// CreateEndpoint makes the endpoint of an mcp-server:// trigger.
func (c *ServerComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	return c.impl.CreateEndpoint(u)
}

// Spec describes the options of mcp-server:// URIs.
func (c *ServerComponent) Spec() *component.Spec { return c.impl.Spec() }

// Start starts the declared servers; the engine calls it.
func (c *ServerComponent) Start(ctx context.Context) error { return c.impl.Start(ctx) }

// Stop stops every server; the engine calls it.
func (c *ServerComponent) Stop(ctx context.Context) error { return c.impl.Stop(ctx) }

// NewSDKServer builds a go-sdk server offering hc's workflows as tools (and the
// helix://workflows resource), as a Helix server with opts would, so a program can
// serve them on any go-sdk transport (in-memory transports in tests, for example).
func NewSDKServer(hc *engine.Context, opts ServerOptions) (*sdk.Server, error) {
	return server.NewSDKServer(hc, opts.internal())
}

// internal converts the options to the server package's.
func (o ServerOptions) internal() server.Options {
	return server.Options{
		ID: o.ID, Name: o.Name, Version: o.Version, Transport: o.Transport, Addr: o.Addr,
		Expose: o.Expose, Tools: o.Tools, Stateless: o.Stateless,
		SessionIdleTimeout: o.SessionIdleTimeout,
	}
}

// SanitizeToolName turns a workflow id into its tool name ("api.v2-users" →
// "api_v2_users").
func SanitizeToolName(id string) string { return tool.SanitizeName(id) }

// ClientComponent is the mcp:// component, which calls tools of other MCP servers
// from targets (mcp://host:port/tool?transport=http); register it with
// h.AddComponent(ClientScheme, NewClient()). It connects to a server on the first
// call to one of its tools, not at start, and closes its connections at Stop.
type ClientComponent struct{ impl *client.Component }

// ToolError is a tool call that the server answered with an error (isError, or a
// JSON-RPC error when Protocol is set); errors.As finds it in a failed exchange's
// error.
type ToolError = client.ToolError

// ClientScheme is the scheme of the mcp:// component.
const ClientScheme = client.Scheme

// NewClient returns an mcp:// component.
func NewClient() *ClientComponent { return &ClientComponent{impl: client.New()} }

// CreateEndpoint makes the endpoint of an mcp:// target.
func (c *ClientComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	return c.impl.CreateEndpoint(u)
}

// Spec describes the options of mcp:// URIs.
func (c *ClientComponent) Spec() *component.Spec { return c.impl.Spec() }

// Start does nothing: connections open on first use. The engine calls it.
func (c *ClientComponent) Start(ctx context.Context) error { return c.impl.Start(ctx) }

// Stop closes every connection; the engine calls it.
func (c *ClientComponent) Stop(ctx context.Context) error { return c.impl.Stop(ctx) }
