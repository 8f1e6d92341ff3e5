package transport

import (
	"strings"
	"testing"
)

func TestStripPayload(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"result":{"ttlMs":0,"cacheScope":"public","tools":[]}}`:                                  `{"id":1,"jsonrpc":"2.0","result":{"tools":[]}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}},{"jsonrpc":"2.0","id":2,"result":{}}]`: `[{"id":1,"jsonrpc":"2.0","result":{"content":[]}},{"jsonrpc":"2.0","id":2,"result":{}}]`,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ttlMs\":5,\"x\":1}}\n\n":                       "event: message\ndata: {\"id\":3,\"jsonrpc\":\"2.0\",\"result\":{\"x\":1}}\n\n",
		// Only top-level result fields go; a tool's own data keeps them.
		`{"jsonrpc":"2.0","id":4,"result":{"structuredContent":{"ttlMs":1}}}`: `{"jsonrpc":"2.0","id":4,"result":{"structuredContent":{"ttlMs":1}}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"ttlMs"}}`:       `{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"ttlMs"}}`,
	} {
		if got := string(stripPayload([]byte(in))); got != want {
			t.Errorf("%s\n got %s\nwant %s", strings.TrimSpace(in), got, want)
		}
	}
}
