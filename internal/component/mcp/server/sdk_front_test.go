package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// mcp-go's default client (v1.2.1, bench/peers) as captured on the wire: it probes
// with server/discover at 2026-07-28 and falls back to initialize when the server
// answers -32022. Every Helix server now answers the probe (2026-07-28 is served
// without a session on the same endpoint), and a client that initializes anyway
// still gets a session.
const mcpgoDiscover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
const mcpgoInitialize = `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"","version":""},"capabilities":{}}}`

// TestMcpGoDefaultClientSequence replays mcp-go's default client against both
// Streamable HTTP implementations, stateful: the probe is answered with every
// version the server speaks, 2026-07-28 and the earlier ones, and the handshake
// of a client that prefers a session still serves tools.
func TestMcpGoDefaultClientSequence(t *testing.T) {
	t.Parallel()
	for _, impl := range []string{HTTPTransportHelix, HTTPTransportSDK} {
		t.Run(impl, func(t *testing.T) {
			hc := newTestContext(t, greetWorkflow())
			comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0", HTTPTransport: impl})
			url := serverURL(t, comp, "s", "/mcp")
			r := send(t, http.MethodPost, url, map[string]string{"Mcp-Method": "server/discover", "Mcp-Protocol-Version": "2026-07-28"}, mcpgoDiscover)
			body := r.body
			if i := strings.Index(body, "data: "); i >= 0 { // the go-sdk's handler answers with an event
				body = strings.TrimSpace(body[i+len("data: "):])
			}
			var d struct {
				ID     json.RawMessage `json:"id"`
				Result struct {
					SupportedVersions []string `json:"supportedVersions"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(body), &d); err != nil || r.status != http.StatusOK || string(d.ID) != "1" ||
				r.header.Get("Mcp-Session-Id") != "" || !slices.Contains(d.Result.SupportedVersions, "2026-07-28") ||
				!slices.Contains(d.Result.SupportedVersions, "2025-11-25") {
				t.Fatalf("server/discover at 2026-07-28: %d %s", r.status, r.body)
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
			for _, k := range newProtocolResultKeys {
				if strings.Contains(r.body, `"`+k+`"`) {
					t.Errorf("tools/list of a 2025-11-25 session has %s: %s", k, r.body)
				}
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

// TestSSEResultsHaveNoNewProtocolFields: the go-sdk's SSE transport (2024-11-05)
// sends list results without the 2026-07-28 fields too.
func TestSSEResultsHaveNoNewProtocolFields(t *testing.T) {
	t.Parallel()
	comp := startContext(t, newTestContext(t, greetWorkflow()), Options{ID: "sse", Transport: "sse", Addr: "127.0.0.1:0"})
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, serverURL(t, comp, "sse", "/sse"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	events.Buffer(make([]byte, 1<<20), 1<<20)
	nextData := func() string {
		t.Helper()
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				return data
			}
		}
		t.Fatalf("stream ended: %v", events.Err())
		return ""
	}
	endpoint := serverURL(t, comp, "sse", "") + nextData()
	for _, body := range []string{stdioInitialize("2025-11-25"), `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`} {
		if r := send(t, http.MethodPost, endpoint, nil, body); r.status != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", body, r.status, r.body)
		}
		if !strings.Contains(body, `"id"`) {
			continue
		}
		data := nextData()
		if strings.Contains(body, "tools/list") {
			if !strings.Contains(data, `"greet"`) {
				t.Fatalf("tools/list: %s", data)
			}
			for _, k := range newProtocolResultKeys {
				if strings.Contains(data, `"`+k+`"`) {
					t.Errorf("tools/list over SSE has %s: %s", k, data)
				}
			}
		}
	}
}
