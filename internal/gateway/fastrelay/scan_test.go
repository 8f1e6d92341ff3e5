package fastrelay

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// scanSeeds are JSON-RPC messages as upstreams write them, and hostile ones:
// spaced, escaped and case-changed names, repeated members, wrong types,
// truncated and non-JSON text.
var scanSeeds = []string{
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}`,
	` { "jsonrpc" : "2.0" , "id" : "hx-1" , "result" : { "a" : [ 1 , { "b" : "}" } ] } } `,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such method","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
	`{"jsonrpc":"2.0","id":5,"method":"roots/list"}`,
	`{"jsonrpc":"2.0","id":null,"result":null,"params":null,"error":null,"method":null}`,
	`{"ID":1,"Result":{}}`,
	`{"\u0069d":1,"result":{}}`,
	`{"id":1,"id":2,"result":{}}`,
	`{"method":"a","method":null}`,
	`{"method":"a\u0062\"c","id":true}`,
	`{"method":5}`,
	`{"error":"bad"}`,
	`{"error":{"code":"x"}}`,
	`{"id":1,"result":"s\"}"}`,
	`{"unknown":{"id":9},"id":[1,{"a":"]"}],"result":-1.5e3}`,
	`{}`,
	`[]`,
	`"str"`,
	`null`,
	`{"id":1,"result":{}`,
	`{"id":1,"result":{}}}`,
	`{nope`,
	``,
	"{\"id\":1,\"result\":\"\xff\"}",
}

// TestParseMessageReadsAsEncodingJSON: the scan reads every message as
// encoding/json decodes it into the relay's message (the same members, or an
// error for the same inputs).
func TestParseMessageReadsAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range scanSeeds {
		checkParse(t, []byte(s))
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkParse)
}

func checkParse(t *testing.T, data []byte) {
	var want message
	wantErr := json.Unmarshal(data, &want)
	got, err := parseMessage(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", data, err, wantErr)
	}
	if err != nil {
		return
	}
	if string(got.ID) != string(want.ID) || got.Method != want.Method || string(got.Params) != string(want.Params) ||
		string(got.Result) != string(want.Result) || (got.Result == nil) != (want.Result == nil) ||
		(got.ID == nil) != (want.ID == nil) || !reflect.DeepEqual(got.Error, want.Error) {
		t.Fatalf("%q:\n scan %+v\n json %+v", data, got, want)
	}
}

// TestParseMessageScansTheCommonMessage: a response as upstreams write it is
// read by the scan, its result a part of the input, not a copy.
func TestParseMessageScansTheCommonMessage(t *testing.T) {
	t.Parallel()
	data := []byte(`{"jsonrpc":"2.0","id":"hx-3","result":{"content":[]}}`)
	m, ok := scanMessage(data)
	if !ok || string(m.Result) != `{"content":[]}` || &m.Result[0] != &data[strings.Index(string(data), `{"content"`)] {
		t.Fatalf("scan: %v %+v", ok, m)
	}
}

// BenchmarkParseMessage reads a typical tools/call response.
func BenchmarkParseMessage(b *testing.B) {
	data := []byte(`{"jsonrpc":"2.0","id":"hx-12345","result":{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello","n":1.5}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseMessage(data); err != nil {
			b.Fatal(err)
		}
	}
}
