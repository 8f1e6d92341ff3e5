package server

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// logLevels are the levels MCP defines (RFC 5424's severities), in order.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

const logLevelList = "debug, info, notice, warning, error, critical, alert, emergency"

// checkLogLevel refuses a logging/setLevel whose level MCP does not define
// (the go-sdk keeps any string, and a session at "loudest" would then send
// no log message at all): Invalid Params, naming the levels. Registered
// outermost, so a gateway behind it never relays such a level upstream.
func checkLogLevel(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "logging/setLevel" {
			//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
			if p, ok := req.GetParams().(*sdk.SetLoggingLevelParams); ok && p != nil && !knownLogLevel(string(p.Level)) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("Invalid params: logging level %q is not one MCP defines; use one of %s", truncateLevel(string(p.Level)), logLevelList)}
			}
		}
		return next(ctx, method, req)
	}
}

func knownLogLevel(l string) bool {
	for _, k := range logLevels {
		if l == k {
			return true
		}
	}
	return false
}

// truncateLevel keeps an error short whatever a client sent as its level.
func truncateLevel(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
