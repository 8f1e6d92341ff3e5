package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBatchCallsTakeOneRateLimitTokenEach: rate_limit counts calls, not POSTs: a
// batch of N calls takes N tokens, and a batch over what is left is refused with
// 429 before any of its calls runs.
func TestBatchCallsTakeOneRateLimitTokenEach(t *testing.T) {
	t.Parallel()
	a := startSecure(t, `
workflows:
  - id: greet
    trigger: direct://greet
    steps:
      - set-body: "hello"
mcps:
  - id: tools
    addr: "127.0.0.1:0"
    expose: [greet]
    api_keys: [batch-key]
    rate_limit: 10
`, nil)
	endpoint := serverURL(t, a, "tools") + "/mcp"
	rc := newRawClient(t)
	key := []string{"X-Api-Key", "batch-key"}
	resp, body := rc.post(endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, key...)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	hdr := append(key, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-03-26")
	if resp, body := rc.post(endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	batch := func(n, first int) string {
		var calls []string
		for i := range n {
			calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"greet","arguments":{}}}`, first+i))
		}
		return "[" + strings.Join(calls, ",") + "]"
	}
	// 2 tokens used; a batch of 3 calls takes 3 of the 8 left.
	if resp, body := rc.post(endpoint, batch(3, 100), hdr...); resp.StatusCode != http.StatusOK || strings.Count(body, `"hello"`) != 3 {
		t.Fatalf("batch of 3 with 8 tokens left: %d %s", resp.StatusCode, body)
	}
	// A batch of 6 calls needs 6 of the 5 left: refused, none of its calls runs.
	resp, body = rc.post(endpoint, batch(6, 200), hdr...)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "each takes a token") {
		t.Fatalf("batch of 6 with 5 tokens left: %d %s", resp.StatusCode, body)
	}
}
