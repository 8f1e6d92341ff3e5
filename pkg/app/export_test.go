package app

import (
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/management"
)

// Names the external tests (package app_test) use that are not public API.

const DefaultShutdownTimeout = defaultShutdownTimeout

// Metrics is the /metrics snapshot.
func (a *App) Metrics() management.Metrics { return a.metricsSnapshot() }

// MCPServers returns the app's mcp-server component.
func (a *App) MCPServers() *mcpserver.Component { return a.mcpServers() }
