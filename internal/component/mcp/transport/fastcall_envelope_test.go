package transport

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// envelopeMatches checks that the fast path's hand-written envelope is byte for byte
// what encoding the response through toWire gives, for a result encoded as run
// encodes it.
func envelopeMatches(t *testing.T, id jsonrpc.ID, res *sdk.CallToolResult) {
	t.Helper()
	data, err := res.MarshalJSON()
	if err != nil {
		t.Skip("not encodable:", err)
	}
	want, err := json.Marshal(toWire(&jsonrpc.Response{ID: id, Result: data}))
	if err != nil {
		t.Fatal(err)
	}
	got := appendResultEnvelope(nil, id, data)
	if !bytes.Equal(got, want) {
		t.Fatalf("envelope\n got %s\nwant %s", got, want)
	}
}

func TestResultEnvelopeMatchesEncoder(t *testing.T) {
	t.Parallel()
	num, _ := jsonrpc.MakeID(float64(-42))
	str, _ := jsonrpc.MakeID(`a"<b>&\u2028` + "\u2028é\x01")
	for _, id := range []jsonrpc.ID{num, str, {}} {
		for _, res := range []*sdk.CallToolResult{
			{Content: []sdk.Content{}},
			{Content: []sdk.Content{&sdk.TextContent{Text: "<script>&amp;\u2028\u2029 \"q\" \\ é 😀 \x00\x1f"}}},
			{Content: []sdk.Content{&sdk.TextContent{Text: "x"}}, StructuredContent: map[string]any{"a<": []any{1.5, nil, true, "&"}}, IsError: true},
			{Content: []sdk.Content{&sdk.ImageContent{Data: []byte{0, 1, 2}, MIMEType: "image/png"}}},
		} {
			envelopeMatches(t, id, res)
		}
	}
}

func FuzzResultEnvelope(f *testing.F) {
	f.Add("hello", "7", int64(3), true)
	f.Add("<a href=\"x\">&</a>\u2028", "id\"<>", int64(-1), false)
	f.Fuzz(func(t *testing.T, text, sid string, nid int64, useNum bool) {
		var id jsonrpc.ID
		var err error
		if useNum {
			id, err = jsonrpc.MakeID(float64(nid % (1 << 53)))
		} else {
			id, err = jsonrpc.MakeID(sid)
		}
		if err != nil {
			t.Skip()
		}
		envelopeMatches(t, id, &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}},
			StructuredContent: map[string]any{text: text}})
	})
}
