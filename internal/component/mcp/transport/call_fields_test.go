package transport

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// decodedCallFields is what encoding/json reads of the same fields: the
// reference readCallFields must agree with.
func decodedCallFields(params json.RawMessage) (callFields, bool) {
	if len(params) == 0 {
		return callFields{object: true}, true
	}
	var p struct {
		Meta            map[string]json.RawMessage `json:"_meta"`
		ProtocolVersion json.RawMessage            `json:"protocolVersion"`
		Name            json.RawMessage            `json:"name"`
		URI             json.RawMessage            `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil {
		return callFields{}, false
	}
	return callFields{object: true, metaVersion: p.Meta[sdk.MetaKeyProtocolVersion],
		protocolVersion: p.ProtocolVersion, name: p.Name, uri: p.URI}, true
}

func sameCallFields(a, b callFields) bool {
	eq := func(x, y json.RawMessage) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	return a.object == b.object && eq(a.metaVersion, b.metaVersion) && eq(a.protocolVersion, b.protocolVersion) &&
		eq(a.name, b.name) && eq(a.uri, b.uri)
}

var callFieldsSeeds = []string{
	``,
	`{}`,
	`{"name":"echo","arguments":{"name":"inner","_meta":{"x":1}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_meta":{"other":true}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":null,"name":"a"}`,
	`{"_meta":[1,2],"name":"a"}`,
	`{"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":42}}`,
	`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`,
	`{"uri":"test://x","name":"a\"b"}`,
	`[1,2]`,
	`"text"`,
	`null`,
	` { "name" : "spaced" , "uri" : "u" } `,
	`{`, `{"name"`, `{"name":`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":`,
	`{"NAME":"upper","_Meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"name":"a","naſe":"b","Key":1}`,
}

func TestReadCallFieldsAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range callFieldsSeeds {
		got := readCallFields(&jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(s)})
		want, _ := decodedCallFields(json.RawMessage(s))
		if !sameCallFields(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", s, got, want)
		}
	}
}

func FuzzReadCallFields(f *testing.F) {
	for _, s := range callFieldsSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := readCallFields(&jsonrpc.Request{Method: "tools/call", Params: json.RawMessage(s)})
		if s != "" && !json.Valid([]byte(s)) {
			// The params of a decoded message are valid JSON; should some not
			// be, reading them must not panic (it did not get here if it did).
			return
		}
		want, _ := decodedCallFields(json.RawMessage(s))
		if !sameCallFields(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", s, got, want)
		}
	})
}
