package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// logging/setLevel takes the eight levels MCP defines and refuses any other
// with Invalid Params naming them, stateful and stateless.
func TestSetLevelRefusesUnknownLevels(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, troubleWorkflows(nil)...)
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0"}, Options{ID: "sl", Addr: "127.0.0.1:0", Stateless: true})
	for _, id := range []string{"s", "sl"} {
		cs := connectHTTPAt(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, id, "/mcp"), MaxRetries: -1}, "2025-11-25")
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
		for _, bad := range []sdk.LoggingLevel{"loudest", "", "INFO", "warn"} {
			//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
			err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: bad})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams ||
				!strings.Contains(rpcErr.Message, "debug, info, notice, warning, error, critical, alert, emergency") {
				t.Errorf("%s: level %q: %v", id, bad, err)
			}
		}
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
		for _, good := range []sdk.LoggingLevel{"debug", "emergency"} {
			//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still served
			if err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: good}); err != nil {
				t.Errorf("%s: level %q refused: %v", id, good, err)
			}
		}
	}
}
