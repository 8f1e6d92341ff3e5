package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMcpParamHeadersOfAYAMLTool: a tool whose input schema (a tools: override,
// as in YAML) marks an argument with x-mcp-header has its Mcp-Param-* header
// checked on both Streamable HTTP implementations of a default (stateful) server.
func TestMcpParamHeadersOfAYAMLTool(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","x-mcp-header":"Name"}}}`)
	const body = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, impl := range []string{HTTPTransportHelix, HTTPTransportSDK} {
		t.Run(impl, func(t *testing.T) {
			t.Parallel()
			comp := startContext(t, newTestContext(t, greetWorkflow()), Options{ID: "s", Addr: "127.0.0.1:0", HTTPTransport: impl,
				Tools: map[string]ToolOverride{"greet": {InputSchema: schema}}})
			url := serverURL(t, comp, "s", "/mcp")
			hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "greet"}
			if r := send(t, http.MethodPost, url, hdr, body); r.status != http.StatusBadRequest || !strings.Contains(r.body, "-32020") {
				t.Fatalf("without Mcp-Param-Name: %d %s", r.status, r.body)
			}
			hdr["Mcp-Param-Name"] = "=?base64?QWRh?="
			if r := send(t, http.MethodPost, url, hdr, body); r.status != http.StatusOK || !strings.Contains(r.body, "Hello, Ada!") {
				t.Fatalf("with Mcp-Param-Name: %d %s", r.status, r.body)
			}
		})
	}
}
