// Package mcptest holds raw HTTP helpers that the tests of the MCP packages
// share: a request with MCP's headers and a Streamable HTTP session handshake.
package mcptest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// InitializeBody is a JSON-RPC initialize request from a raw client.
const InitializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// Reply is what a raw request got back.
type Reply struct {
	Status int
	Header http.Header
	Body   string
}

// Send posts body to url with the JSON content type and the Accept header MCP
// wants; hdr adds headers, and an empty value removes one.
func Send(ctx context.Context, t testing.TB, method, url string, hdr map[string]string, body string) Reply {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Reply{resp.StatusCode, resp.Header, string(b)}
}

// InitSession opens a stateful session at url (initialize, then the
// initialized notification) and returns its Mcp-Session-Id.
func InitSession(ctx context.Context, t testing.TB, url string) string {
	t.Helper()
	r := Send(ctx, t, http.MethodPost, url, nil, InitializeBody)
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || sid == "" || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("initialize: %d %q %s", r.Status, sid, r.Body)
	}
	if r := Send(ctx, t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.Status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.Status, r.Body)
	}
	return sid
}
