package transport

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzParsedParamsAreValid: the params of a message decodeShallow accepted are
// valid JSON for encoding/json too. The fast path's readers (scanParams,
// scanCallFields) walk params with jsonscan, which needs valid JSON, without
// checking them again: the POST's decoding has.
func FuzzParsedParamsAreValid(f *testing.F) {
	for _, p := range []string{`{"name":"echo","arguments":{"text":"hi"}}`, `{"a":"\u00e9"}`, `{"a":[1,2,{"b":null}]}`, `{"a":1e5}`, `{}`, `[]`, `"x"`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, params string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
		m, _, err := decodeShallow([]byte(body))
		if err != nil {
			return
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || req.Params == nil {
			return
		}
		if !json.Valid(req.Params) {
			t.Fatalf("decodeShallow accepted %q with params %q, which encoding/json refuses", body, req.Params)
		}
	})
}
