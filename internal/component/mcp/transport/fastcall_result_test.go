package transport

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/plainjson"
	"github.com/arvenza/helix/internal/plainjson/plainjsontest"
)

func TestPlainResultsEnabled(t *testing.T) {
	t.Parallel()
	if !plainResults {
		t.Fatal("the hand encoding of tool results is off: it no longer writes what the go-sdk writes")
	}
}

// plainResultMatches requires appendPlainResult and plainResultEnvelope to write
// what MarshalJSON and the envelope of run's old way write, whenever they take
// res; shouldTake says they must.
func plainResultMatches(t *testing.T, id jsonrpc.ID, res *sdk.CallToolResult, shouldTake bool) {
	t.Helper()
	want, wantErr := res.MarshalJSON()
	got, ok := appendPlainResult([]byte("prefix"), res)
	env, start, envOK := plainResultEnvelope(id, res)
	if ok != envOK {
		t.Fatalf("appendPlainResult took %v, plainResultEnvelope %v", ok, envOK)
	}
	if !ok {
		if shouldTake {
			t.Fatalf("result %#v not taken", res)
		}
		return
	}
	if wantErr != nil {
		t.Fatalf("encoded %s, MarshalJSON failed: %v", got, wantErr)
	}
	if got = bytes.TrimPrefix(got, []byte("prefix")); !bytes.Equal(got, want) {
		t.Fatalf("result\n got %s\nwant %s", got, want)
	}
	wantEnv, err := json.Marshal(toWire(&jsonrpc.Response{ID: id, Result: want}))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(env, wantEnv) || !bytes.Equal(env[start:len(env)-1], want) {
		t.Fatalf("envelope\n got %s (result at %d)\nwant %s", env, start, wantEnv)
	}
}

type textMarshaler struct{ s string }

func (m textMarshaler) MarshalText() ([]byte, error) { return []byte("<" + m.s + ">"), nil }

type ptrMarshaler struct{ N int }

func (*ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"p" : "<&>"}`), nil }

const awkward = "a\"\\/<>&\b\f\n\r\t\x00\x01\x1f\x7f é😀\u2028\u2029\ufffd\xff\xe2\x80\xed\xa0\x80x"

func TestPlainResultMatchesMarshalJSON(t *testing.T) {
	t.Parallel()
	num, _ := jsonrpc.MakeID(float64(-42))
	str, _ := jsonrpc.MakeID(`a"<b>&` + "\u2028é\x01\xff")
	for _, id := range []jsonrpc.ID{num, str, {}, int64ID(math.MaxInt64)} {
		for _, res := range []*sdk.CallToolResult{
			{},
			{Content: []sdk.Content{}},
			{Content: []sdk.Content{&sdk.TextContent{}}},
			{Content: []sdk.Content{&sdk.TextContent{Text: awkward}, &sdk.TextContent{Text: "hello"}}, IsError: true},
			{Content: []sdk.Content{&sdk.TextContent{Text: "x", Meta: sdk.Meta{}}}},
			{Content: []sdk.Content{&sdk.TextContent{Text: "x"}}, Meta: sdk.Meta{}},
			{Content: []sdk.Content{}, StructuredContent: map[string]any{awkward: []any{awkward, 1.5, 1e21, math.Copysign(0, -1), nil, true,
				map[string]any{"z": 1, "a": map[string]any{}}}}},
			{Content: []sdk.Content{}, StructuredContent: []any{}},
			{Content: []sdk.Content{}, StructuredContent: "<s>"},
			{Content: []sdk.Content{}, StructuredContent: 0},
			{Content: []sdk.Content{}, StructuredContent: false},
			{Content: []sdk.Content{}, StructuredContent: map[string]any(nil)},
			{Content: []sdk.Content{}, StructuredContent: (*int)(nil)},
			{Content: []sdk.Content{}, StructuredContent: json.RawMessage(`{ "a" : "<&>\u2028" , "b":[ 1 , 2 ] }`)},
			{Content: []sdk.Content{}, StructuredContent: map[textMarshaler]int{{"k"}: 1}},
			{Content: []sdk.Content{}, StructuredContent: ptrMarshaler{N: 1}},
			{Content: []sdk.Content{}, StructuredContent: &ptrMarshaler{N: 1}},
			{Content: []sdk.Content{}, StructuredContent: struct {
				A string `json:"a,omitempty"`
				B []byte
				C float32
			}{B: []byte{0, 1, 2}, C: 0.1}},
			{Content: []sdk.Content{}, StructuredContent: plainjsontest.ManyKeys()},
			{Content: []sdk.Content{}, StructuredContent: plainjsontest.DeepValue(plainjson.MaxDepth + 3)},
			{Content: []sdk.Content{}, StructuredContent: map[string]any{"a": []any{1e-7, 1e20, 1e21, 123456789.125, -1e-300, int64(3)}}},
		} {
			plainResultMatches(t, id, res, true)
		}
		// Shapes left to MarshalJSON.
		for _, res := range []*sdk.CallToolResult{
			{Content: []sdk.Content{&sdk.TextContent{Text: "x", Meta: sdk.Meta{"k": 1}}}},
			{Content: []sdk.Content{&sdk.TextContent{Text: "x", Annotations: &sdk.Annotations{Priority: 1}}}},
			{Content: []sdk.Content{&sdk.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
			{Content: []sdk.Content{nil}},
			{Content: []sdk.Content{}, Meta: sdk.Meta{"k": "v"}},
			{Content: []sdk.Content{}, RequestState: "s"},
			{Content: []sdk.Content{}, InputRequests: sdk.InputRequestMap{}},
			{Content: []sdk.Content{}, StructuredContent: math.NaN()},
			{Content: []sdk.Content{}, StructuredContent: func() {}},
		} {
			plainResultMatches(t, id, res, false)
		}
	}
}

// A result relayed from another server may carry a resultType, which only
// MarshalJSON writes.
func TestPlainResultLeavesResultType(t *testing.T) {
	t.Parallel()
	var res sdk.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[{"type":"text","text":"x"}],"resultType":"complete"}`), &res); err != nil {
		t.Fatal(err)
	}
	if _, ok := appendPlainResult(nil, &res); ok {
		t.Fatal("a result with a resultType was taken")
	}
}

// fuzzValue builds a structured value from the fuzzer's bytes.
func fuzzValue(sel []byte, strs []string, depth int) (any, []byte) {
	if len(sel) == 0 {
		return nil, sel
	}
	b, sel := sel[0], sel[1:]
	s := strs[int(b>>4)%len(strs)]
	switch b % 9 {
	case 0:
		return nil, sel
	case 1:
		return s, sel
	case 2:
		return float64(int8(b)) / 3, sel
	case 3:
		return b&0x10 != 0, sel
	case 4, 5:
		if depth > 4 {
			return s, sel
		}
		m := map[string]any{}
		for i := 0; i < int(b>>5) && len(sel) > 0; i++ {
			var v any
			v, sel = fuzzValue(sel, strs, depth+1)
			m[strs[(i+int(b))%len(strs)]+string(rune('a'+i))] = v
		}
		return m, sel
	case 6, 7:
		if depth > 4 {
			return s, sel
		}
		var a []any
		for i := 0; i < int(b>>5) && len(sel) > 0; i++ {
			var v any
			v, sel = fuzzValue(sel, strs, depth+1)
			a = append(a, v)
		}
		return a, sel
	}
	return json.RawMessage(s), sel
}

func FuzzPlainResult(f *testing.F) {
	f.Add("hello", awkward, "<k>", []byte{4, 0x61, 0x35, 6, 0x41, 7}, uint8(1), true)
	f.Add("", "\u2028\u2029", "&", []byte{}, uint8(0), false)
	f.Add("\xff", "\x00", "", []byte{5, 0xe4, 1, 2, 3, 0x47}, uint8(3), true)
	f.Add("x", `{"a" : [1, "<"]}`, "k", []byte{8}, uint8(2), false)
	f.Fuzz(func(t *testing.T, a, b, c string, sel []byte, nContent uint8, isError bool) {
		strs := []string{a, b, c}
		res := &sdk.CallToolResult{IsError: isError}
		switch n := int(nContent % 5); n {
		case 4: // nil content
		default:
			res.Content = []sdk.Content{}
			for i := range n {
				res.Content = append(res.Content, &sdk.TextContent{Text: strs[i%len(strs)]})
			}
		}
		if len(sel) > 0 {
			res.StructuredContent, _ = fuzzValue(sel, strs, 0)
		}
		id, err := jsonrpc.MakeID(b)
		if err != nil {
			t.Skip()
		}
		_, marshalErr := json.Marshal(res.StructuredContent)
		plainResultMatches(t, id, res, marshalErr == nil)
		if got, want := appendID(nil, id), encodeID(id); !bytes.Equal(got, want) {
			t.Fatalf("id %s, encodeID %s", got, want)
		}
	})
}

// A nil *TextContent makes MarshalJSON panic; appendPlainResult leaves it to it.
func TestPlainResultLeavesNilText(t *testing.T) {
	t.Parallel()
	var nilText *sdk.TextContent
	if _, ok := appendPlainResult(nil, &sdk.CallToolResult{Content: []sdk.Content{nilText}}); ok {
		t.Fatal("a nil *TextContent was taken")
	}
}

func BenchmarkResultEncoding(b *testing.B) {
	id, _ := jsonrpc.MakeID(float64(2))
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}}
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, _ := res.MarshalJSON()
			_ = appendResultEnvelope(make([]byte, 0, len(data)+48), id, data)
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = plainResultEnvelope(id, res)
		}
	})
}
