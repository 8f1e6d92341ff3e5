package client

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Log messages of the server (notifications/message), for a caller that sets
// Config.LogLevel and Config.OnLog (helix mcp call shows them as they arrive).
//
// Servers send them only to a client that asked: before the 2026-07-28 protocol
// with logging/setLevel once per session, from then on in each request's _meta.
// The client does both. Like progress (progress.go), the messages are taken from
// the wire as they are read, so that those sent before a call's result reach
// OnLog before the call returns.

// protocolWithRequestLogLevel is the first MCP version in which a request carries
// the log level it wants in its _meta (and logging/setLevel is deprecated).
const protocolWithRequestLogLevel = "2026-07-28"

// setLoggingLevel sends logging/setLevel on a new session when LogLevel is set, the
// server declares logging and the protocol still uses it. A server that refuses
// only loses its log messages: the failure is logged, not returned.
func (c *Conn) setLoggingLevel(ctx context.Context, s *sdk.ClientSession) {
	if c.cfg.LogLevel == "" {
		return
	}
	init := s.InitializeResult()
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still offered to clients in the window
	if init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil || init.ProtocolVersion >= protocolWithRequestLogLevel {
		return
	}
	//lint:ignore SA1019 servers on protocols before 2026-07-28 need it
	if err := s.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: sdk.LoggingLevel(c.cfg.LogLevel)}); err != nil {
		c.log.Debug("mcp logging/setLevel failed", "server", c.cfg.target(), "error", err)
	}
}

// askForLogs puts LogLevel into a call's _meta (the 2026-07-28 way; older servers
// ignore the key).
func (c *Conn) askForLogs(params *sdk.CallToolParams) {
	if c.cfg.LogLevel == "" {
		return
	}
	meta := params.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still offered to clients in the window
	meta[sdk.MetaKeyLogLevel] = c.cfg.LogLevel
	params.SetMeta(meta)
}

// forwardLogParams passes the params of a notifications/message to OnLog.
func (c *Conn) forwardLogParams(params json.RawMessage) {
	//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still offered to clients in the window
	var p sdk.LoggingMessageParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c.cfg.OnLog(&p)
}
