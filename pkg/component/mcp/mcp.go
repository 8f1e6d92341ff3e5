package mcp

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/uri"
)

// Server side: package server.
type (
	ServerComponent    = server.Component
	ServerOptions      = server.Options
	ServerInfo         = server.Info
	ToolInfo           = server.ToolInfo
	ToolOverride       = server.ToolOverride
	ToolCallStats      = server.ToolCallStats
	ToolNameClashError = server.ToolNameClashError
	UnknownExposeError = server.UnknownExposeError
	WorkflowEntry      = server.WorkflowEntry
)

// Server side: package server.
const (
	ServerScheme                   = server.Scheme
	TransportHTTP                  = server.TransportHTTP
	TransportSSE                   = server.TransportSSE
	TransportStdio                 = server.TransportStdio
	HTTPTransportHelix             = server.HTTPTransportHelix
	HTTPTransportSDK               = server.HTTPTransportSDK
	DefaultHTTPTransport           = server.DefaultHTTPTransport
	DefaultServerName              = server.DefaultServerName
	DefaultServerVersion           = server.DefaultServerVersion
	DefaultAddr                    = server.DefaultAddr
	DefaultSessionIdleTimeout      = server.DefaultSessionIdleTimeout
	DefaultMaxSessions             = server.DefaultMaxSessions
	DefaultMaxSessionsPerPrincipal = server.DefaultMaxSessionsPerPrincipal
	CodeShuttingDown               = server.CodeShuttingDown
	OutputSchemaKey                = server.OutputSchemaKey
	WorkflowsResourceURI           = server.WorkflowsResourceURI
	RoutesResourceURI              = server.RoutesResourceURI
)

// NewServer returns the mcp-server component for hc; register it with
// hc.AddComponent("mcp-server", NewServer(hc)). It has no side effects until Start.
// See [server.New].
func NewServer(hc *engine.Context) *ServerComponent { return server.New(hc) }

// NewSDKServer builds a go-sdk server offering the tools and resources a Helix
// server with opts would offer; see [server.NewSDKServer].
func NewSDKServer(hc *engine.Context, opts ServerOptions) (*sdk.Server, error) {
	return server.NewSDKServer(hc, opts)
}

// ServerOptionsFromURI reads an mcp-server:// URI; see [server.OptionsFromURI].
func ServerOptionsFromURI(u *uri.URI) (ServerOptions, error) { return server.OptionsFromURI(u) }

// WorkflowEntries lists the workflows of hc as the helix://workflows resource shows
// them; see [server.WorkflowEntries].
func WorkflowEntries(hc *engine.Context) []WorkflowEntry { return server.WorkflowEntries(hc) }

// SchemaError makes a JSON Schema validation error readable; see [tool.SchemaError].
func SchemaError(err error) error { return tool.SchemaError(err) }

// SanitizeToolName turns a workflow id into its tool name ("api.v2-users" →
// "api_v2_users"); see [tool.SanitizeName].
func SanitizeToolName(id string) string { return tool.SanitizeName(id) }

// Client side: package client.
type (
	ClientComponent = client.Component
	ClientConfig    = client.Config
	ClientConn      = client.Conn
	ClientEndpoint  = client.Endpoint
	ClientProducer  = client.Producer
	AuthConfig      = client.AuthConfig
	ToolError       = client.ToolError
)

// Client side: package client.
const (
	ClientScheme               = client.Scheme
	ClientName                 = client.Name
	ClientVersion              = client.Version
	DefaultCallTimeout         = client.DefaultCallTimeout
	DefaultAPIKeyHeader        = client.DefaultAPIKeyHeader
	MsgToolErrorNoText         = client.MsgToolErrorNoText
	VariableMcpToolNameWritten = client.VariableMcpToolNameWritten
	AuthBearer                 = client.AuthBearer
	AuthAPIKey                 = client.AuthAPIKey
	AuthOAuth2                 = client.AuthOAuth2
	AuthMTLS                   = client.AuthMTLS
)

// NewClient returns an mcp:// component; see [client.New].
func NewClient() *ClientComponent { return client.New() }

// NewClientConn returns a lazily connecting client of one MCP server; see
// [client.NewConn].
func NewClientConn(cfg ClientConfig) (*ClientConn, error) { return client.NewConn(cfg) }

// NewClientEndpoint returns the endpoint of an mcp:// URI; see [client.NewEndpoint].
func NewClientEndpoint(u *uri.URI, auth *AuthConfig) (*ClientEndpoint, error) {
	return client.NewEndpoint(u, auth)
}

// ParseClientURI reads an mcp:// URI; see [client.ParseURI].
func ParseClientURI(u *uri.URI) (ClientConfig, string, error) { return client.ParseURI(u) }

// ParseAuth reads an auth: block; see [client.ParseAuth].
func ParseAuth(m map[string]any) (*AuthConfig, error) { return client.ParseAuth(m) }

// ArgumentsFromBody shapes an exchange body into tool arguments; see
// [client.ArgumentsFromBody].
func ArgumentsFromBody(body any) map[string]any { return client.ArgumentsFromBody(body) }

// BodyFromResult unpacks a tool result into a body; see [client.BodyFromResult].
func BodyFromResult(res *sdk.CallToolResult) (string, error) { return client.BodyFromResult(res) }

// ConnectHTTPStatus is the HTTP status that made connecting fail, or 0; see
// [client.ConnectHTTPStatus].
func ConnectHTTPStatus(err error) int { return client.ConnectHTTPStatus(err) }
