package transport

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/arvenza/helix/internal/component/mcp/internal/jsondepth"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// matchBothWays runs params through match (scanParams first) and through the
// encoding/json reading alone, and requires the same call, or nil from both.
func matchBothWays(t *testing.T, params string) {
	t.Helper()
	f := NewFastToolCalls(nil, nil)
	f.Exclude("blocked")
	// match reads the params of a message the POST's decoding accepted.
	m, _, err := decodeShallow([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`))
	if err != nil {
		return
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.Params == nil {
		return
	}
	got := f.match([]jsonrpc.Message{req}, false, "2025-06-18", nil)
	// The same call taken from the fields the version checks read.
	fields := readCallFields(req)
	if fromFields := f.match([]jsonrpc.Message{req}, false, "2025-06-18", &fields); (fromFields == nil) != (got == nil) ||
		(got != nil && (fromFields.Name != got.Name || !bytes.Equal(fromFields.Args, got.Args) || !reflect.DeepEqual(fromFields.CallMeta(), got.CallMeta()))) {
		t.Fatalf("params %q: match from the checks' fields gave %+v, from its own reading %+v", params, fromFields, got)
	}
	var want *fastCall
	if trimmed := bytes.TrimSpace(req.Params); len(trimmed) > 0 && trimmed[0] == '{' && !jsondepth.DeeperThan(trimmed, sdkMaxJSONDepth) {
		want = f.matchDecoded(req, trimmed, "2025-06-18")
	}
	if (got == nil) != (want == nil) {
		t.Fatalf("params %q: match gave %+v, the decoding path %+v", params, got, want)
	}
	if got == nil {
		return
	}
	if got.id != want.id || got.Name != want.Name || got.ProtocolVersion != want.ProtocolVersion ||
		!bytes.Equal(got.Args, want.Args) || (got.Args == nil) != (want.Args == nil) ||
		!reflect.DeepEqual(got.CallMeta(), want.CallMeta()) || got.Session != want.Session {
		t.Fatalf("params %q:\n match  %#v\n decode %#v", params, got, want)
	}
}

var matchSamples = []string{
	`{"name":"echo","arguments":{"text":"hello"}}`,
	` {"name":"echo"} `,
	`{"name":"echo","arguments":null}`,
	`{"name":"echo","arguments":[1,2,{"a":"}"}]}`,
	`{"name":"echo","arguments":"x\"}"}`,
	`{"name":"echo","arguments":12.5e3}`,
	`{"name":"echo","arguments":true}`,
	`{"arguments":{},"name":"echo"}`,
	`{ "name" : "echo" , "arguments" : { } , "_meta" : { "traceparent" : "00-x" } }`,
	`{"name":"echo","_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=b"}}`,
	`{"name":"echo","_meta":{}}`,
	`{"name":"echo","_meta":null}`,
	`{"name":"echo","_meta":[]}`,
	`{"name":"echo","_meta":{"progressToken":1}}`,
	`{"name":"echo","_meta":{"traceparent":1}}`,
	`{"name":"echo","_meta":{"traceparent":1,"traceparent":"x"}}`,
	`{"name":"echo","_meta":{"traceparent":"x","traceparent":1}}`,
	`{"name":"echo","_meta":{"trace\u0070arent":"x"}}`,
	`{"name":"echo","_meta":{"traceparent":"a\u0041\n"}}`,
	`{"name":"echo","_meta":{"traceparent":"\xff"}}`,
	`{"name":"echo","_meta":{"x":1,"traceparent":"\xff"}}`,
	`{}`,
	`{"name":null}`,
	`{"name":1}`,
	`{"name":""}`,
	`{"name":"blocked"}`,
	`{"name":"bl\u006fcked"}`,
	`{"name":"echo","name":"blocked"}`,
	`{"name":"blocked","name":"echo"}`,
	`{"name":1,"name":"echo"}`,
	`{"na\u006de":"echo"}`,
	`{"name":"echo","na\u006de":"blocked"}`,
	`{"Name":"echo"}`,
	`{"name":"echo","extra":1}`,
	`{"extra":1,"na\u006de":"echo"}`,
	`{"name":"echo","inputResponses":{}}`,
	`{"name":"é😀"}`,
	`{"name":"\xff\xfe"}`,
	`{"name":"a\u2028b"}`,
	`{"name":"\ud800"}`,
	`{"name":"echo"`,
	`{"name":"echo",}`,
	`{"name":"echo"}x`,
	`{"name":"echo"} {}`,
	`{"name":"echo"}` + "\f",
	`{"name":"ech` + "\x01" + `o"}`,
	`{"name":"echo","arguments":{"a":tru}}`,
	`{"name":"echo","arguments":01}`,
	`{"\xff":1,"name":"echo"}`,
	`{"":1}`,
	`[]`,
	``,
}

func TestScanParamsMatchesDecoding(t *testing.T) {
	t.Parallel()
	for _, p := range matchSamples {
		matchBothWays(t, p)
	}
}

func FuzzScanParams(f *testing.F) {
	for _, p := range matchSamples {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, params string) {
		matchBothWays(t, params)
	})
}

// The usual calls must be decided by the scan, not the slow path.
func TestScanParamsDecidesUsualCalls(t *testing.T) {
	t.Parallel()
	f := NewFastToolCalls(nil, nil)
	id, _ := jsonrpc.MakeID(float64(2))
	for _, p := range []string{
		`{"name":"echo","arguments":{"text":"hello"}}`,
		`{"name":"echo","arguments":{"text":"hello"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`,
	} {
		if fc, ok := f.scanParams(id, []byte(p), "2025-06-18"); !ok || fc == nil {
			t.Fatalf("scanParams(%s) = %v, %v", p, fc, ok)
		}
	}
}

func TestScanParamsAllocs(t *testing.T) {
	// Not parallel: allocation counts are the whole process's.
	testtools.SkipAllocsUnderRace(t)
	f := NewFastToolCalls(nil, nil)
	id, _ := jsonrpc.MakeID(float64(2))
	p := []byte(`{"name":"echo","arguments":{"text":"hello"}}`)
	if n := testing.AllocsPerRun(100, func() { f.scanParams(id, p, "2025-06-18") }); n > 2 {
		t.Errorf("scanParams allocates %v times, want at most 2 (the call, its name)", n)
	}
}

func BenchmarkMatchParams(b *testing.B) {
	f := NewFastToolCalls(nil, nil)
	id, _ := jsonrpc.MakeID(float64(2))
	p := []byte(`{"name":"echo","arguments":{"text":"hello"}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.scanParams(id, p, "2025-06-18")
		}
	})
	b.Run("decode", func(b *testing.B) {
		req := &jsonrpc.Request{ID: id, Method: "tools/call", Params: p}
		b.ReportAllocs()
		for b.Loop() {
			f.matchDecoded(req, p, "2025-06-18")
		}
	})
}
