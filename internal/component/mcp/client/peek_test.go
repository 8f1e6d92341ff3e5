package client

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestPeekRequestDecidesAsDecodeMessage checks peekRequest against go-sdk's own
// decoding, which it replaces: same method, same call/notification, and the same
// bodies refused.
func TestPeekRequestDecidesAsDecodeMessage(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"method":""}`,
		`{"jsonrpc":"2.0","id":7,"method":null}`,
		`{"method":"tools/call","id":2,"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call"} trailing`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call"}{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`  {"jsonrpc":"2.0","id":2.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
		`{"jsonrpc":"2.0","id":2,"method":"x","params":` + deep + `}`,
		`{"jsonrpc":"2.0","id":2,"method":"x","params":"` + deep + `"}`,
		`{"jsonrpc":"2.0","id":2,"method":"x","extra":{"a":[1,2]}}`,
		// Shapes peekPlain decides, and near misses it leaves to the decoder.
		` { "jsonrpc" : "2.0" , "id" : -3 , "method" : "tools/call" , "params" : { "a" : [ 1 , "}\"]" ] } } `,
		`{"jsonrpc":"2.0","id":"x\"y","method":"tools/call","params":"\\"}`,
		`{"jsonrpc":"2.0","id":"","method":"notifications/cancelled","params":{"requestId":"a"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{},"params":[],"result":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":1.5e3}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}`,
		`{"jsonrpc":"2.0","id":1,"id":null,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"\u0078"}`,
		`{"jsonrpc":"2\u002e0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","error":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{}}}`,
		`{"jsonrpc":"2.0","id":01,"method":"x"}`,
		`{}`,
		// Not requests.
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","error":"bad"}`,
		`{"jsonrpc":"1.0","id":1,"method":"tools/call"}`,
		`{"id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":{"n":1},"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":2,"id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x"`,
		`null`,
		`"text"`,
		``,
		`not json`,
	}
	for _, body := range bodies {
		req, err := http.NewRequest(http.MethodPost, "http://mcp.test/", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := peekRequest(req)
		var want requestHead
		m, err := jsonrpc.DecodeMessage([]byte(body))
		r, wantOK := m.(*jsonrpc.Request)
		if err == nil && wantOK {
			want = requestHead{method: r.Method, call: r.IsCall()}
		} else {
			wantOK = false
		}
		if ok != wantOK || got != want {
			t.Errorf("%.80s: peekRequest = %+v, %v; DecodeMessage says %+v, %v", body, got, ok, want, wantOK)
		}
	}
}

func TestPeekRequestWithoutBody(t *testing.T) {
	t.Parallel()
	req, err := http.NewRequest(http.MethodPost, "http://mcp.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := peekRequest(req); ok {
		t.Fatal("a request without a body is not a JSON-RPC request")
	}
}

// BenchmarkPeekRequest is the cost the tracking transport adds to every MCP POST.
func BenchmarkPeekRequest(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"p-3"}}}`)
	req, err := http.NewRequest(http.MethodPost, "http://mcp.test/", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if head, ok := peekRequest(req); !ok || !head.call {
			b.Fatal(head, ok)
		}
	}
}
