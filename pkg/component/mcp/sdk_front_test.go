package mcp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcp-go's default client (v1.2.1, bench/peers) as captured on the wire: it probes
// with server/discover at 2026-07-28 and falls back to initialize when the server
// answers -32022 with the versions it supports. A stateful server that answers the
// probe commits the client to 2026-07-28, which the session then refuses.
const mcpgoDiscover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
const mcpgoInitialize = `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"","version":""},"capabilities":{}}}`

// TestMcpGoDefaultClientSequence replays mcp-go's default client against both
// Streamable HTTP implementations, stateful: the probe is refused with the
// versions the server speaks (all before 2026-07-28), and the handshake that
// follows serves tools.
func TestMcpGoDefaultClientSequence(t *testing.T) {
	for _, impl := range []string{HTTPTransportHelix, HTTPTransportSDK} {
		t.Run(impl, func(t *testing.T) {
			hc := newTestContext(t, greetWorkflow())
			comp := startContext(t, hc, ServerOptions{ID: "s", Addr: "127.0.0.1:0", HTTPTransport: impl})
			url := serverURL(t, comp, "s", "/mcp")
			r := send(t, http.MethodPost, url, map[string]string{"Mcp-Method": "server/discover", "Mcp-Protocol-Version": "2026-07-28"}, mcpgoDiscover)
			var e struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code int64                              `json:"code"`
					Data sdk.UnsupportedProtocolVersionData `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Error.Code != sdk.CodeUnsupportedProtocolVersion ||
				len(e.Error.Data.Supported) == 0 || string(e.ID) != "1" {
				t.Fatalf("server/discover at 2026-07-28: %d %s", r.status, r.body)
			}
			for _, v := range e.Error.Data.Supported {
				if v >= statelessProtocol {
					t.Fatalf("a stateful server offers %s: %s", v, r.body)
				}
			}
			r = send(t, http.MethodPost, url, nil, mcpgoInitialize)
			sid := r.header.Get("Mcp-Session-Id")
			if r.status != http.StatusOK || sid == "" || !strings.Contains(r.body, `"protocolVersion":"2025-11-25"`) {
				t.Fatalf("initialize: %d %s", r.status, r.body)
			}
			hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
			if r := send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
				t.Fatalf("initialized: %d %s", r.status, r.body)
			}
			r = send(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
			if r.status != http.StatusOK || !strings.Contains(r.body, `"greet"`) {
				t.Fatalf("tools/list: %d %s", r.status, r.body)
			}
			r = send(t, http.MethodPost, url, hdr, call(4, "greet", `{"name":"Go"}`))
			if r.status != http.StatusOK || !strings.Contains(r.body, "Hello, Go!") {
				t.Fatalf("tools/call: %d %s", r.status, r.body)
			}
			// An unknown version is refused with the versions the server speaks.
			r = send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "garbage"}, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, "2025-11-25") {
				t.Fatalf("unknown version: %d %s", r.status, r.body)
			}
		})
	}
}
