package transport

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNewEraResultCopiesEveryField: newEraResult encodes a copy of the result
// made field by field; a field a go-sdk update adds would be lost from 2026-07-28
// answers without a word.
func TestNewEraResultCopiesEveryField(t *testing.T) {
	t.Parallel()
	var got []string
	for f := range reflect.TypeFor[sdk.CallToolResult]().Fields() {
		got = append(got, f.Name)
	}
	if !slices.Equal(got, resultFields) {
		t.Fatalf("sdk.CallToolResult has the fields %v; newEraResult knows %v: copy the new ones in newEraResult and list them in resultFields", got, resultFields)
	}
}

// sdkResult is a result as a client decodes it, which sets the unexported
// resultType the way the go-sdk's own handling would (it has no setter).
func sdkResult(t *testing.T, wire string) *sdk.CallToolResult {
	t.Helper()
	var res sdk.CallToolResult
	if err := json.Unmarshal([]byte(wire), &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

// TestNewEraResultAsTheSDKWritesIt compares newEraResult with MarshalJSON of the
// result the go-sdk would send: the same result with its resultType set and the
// server's identity in _meta.
func TestNewEraResultAsTheSDKWritesIt(t *testing.T) {
	t.Parallel()
	impl := &sdk.Implementation{Name: "tools", Version: "1.2.3"}
	f := &FastToolCalls{}
	f.AnswerNewEra(impl)
	if f.newEraHead == nil {
		t.Fatal("AnswerNewEra made no head for plain results")
	}
	const info = `"io.modelcontextprotocol/serverInfo":{"name":"tools","version":"1.2.3"}`
	for _, c := range []struct{ name, in, want string }{
		{"text", `{"content":[{"type":"text","text":"hi"}]}`,
			`{"_meta":{` + info + `},"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`},
		{"structured, error", `{"content":[{"type":"text","text":"no"}],"structuredContent":{"a":1},"isError":true}`,
			`{"_meta":{` + info + `},"content":[{"type":"text","text":"no"}],"structuredContent":{"a":1},"isError":true,"resultType":"complete"}`},
		{"_meta of its own", `{"_meta":{"k":"v"},"content":[]}`,
			`{"_meta":{"k":"v",` + info + `},"content":[],"resultType":"complete"}`},
		{"serverInfo of its own stays", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"other"}},"content":[]}`,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"other"}},"content":[],"resultType":"complete"}`},
		// A result relayed from another 2026-07-28 server: the go-sdk replaces its
		// resultType.
		{"relayed resultType", `{"content":[{"type":"text","text":"x"}],"resultType":"input_required"}`,
			`{"_meta":{` + info + `},"content":[{"type":"text","text":"x"}],"resultType":"complete"}`},
		{"input requests", `{"content":[],"inputRequests":{"q":{"method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object"}}}},"requestState":"s"}`,
			`{"_meta":{` + info + `},"content":[],"requestState":"s","resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"m","mode":"form","requestedSchema":{"type":"object"}}}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, rpcErr := f.newEraResult(sdkResult(t, c.in))
			if rpcErr != nil {
				t.Fatal(rpcErr)
			}
			want, err := sdkResult(t, c.want).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("newEraResult:\n got %s\nwant %s", got, want)
			}
		})
	}
	// Content beside input requests is the go-sdk's internal error.
	_, rpcErr := f.newEraResult(sdkResult(t, `{"content":[{"type":"text","text":"x"}],"inputRequests":{"q":{"method":"elicitation/create","params":{"mode":"form","message":"m"}}}}`))
	if rpcErr == nil || rpcErr.Code != jsonrpc.CodeInternalError {
		t.Errorf("content and input requests: %v; want the internal error", rpcErr)
	}
}

const newEraBase = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`

// newEraMetaCases are _meta values of 2026-07-28 calls and whether the fast path
// takes them; base is the version and a capability.
var newEraMetaCases = func() []struct {
	name, meta string
	ok         bool
} {
	const base = newEraBase
	return []struct {
		name, meta string
		ok         bool
	}{
		{"go-sdk client", `{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"v1.8.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, true},
		{"spaces", `{ "io.modelcontextprotocol/protocolVersion" : "2026-07-28" , "io.modelcontextprotocol/clientCapabilities" : { "sampling" : { } } }`, true},
		{"capability with settings", `{` + base + `,"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}`, true},
		{"capabilities repeated", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientCapabilities":{}}`, true},
		{"capability null", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":null}}`, true},
		{"client info with a website", `{` + base + `,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1","websiteUrl":"https://x"}}`, true},
		{"escaped string", `{` + base + `,"traceparent":"00-\u0078"}`, true},
		{"escaped key", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilitie\u0073":{}}`, true},
		{"version and capabilities", `{` + base + `}`, true},
		{"go-sdk client capabilities", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{"form":{}},"sampling":{"context":{},"tools":{}}}}`, true},
		{"extensions", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":false},"extensions":{"io.modelcontextprotocol/tasks":{},"x":{"n":1,"l":[1,"a",null]}}}}`, true},
		{"listChanged not a boolean", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":1}}}`, false},
		{"extensions not an object", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":[1]}}`, false},
		{"elicitation form twice", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"form":{}}}}`, true},
		{"nine capabilities", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"a":{},"b":{},"c":{},"d":{},"e":{},"f":{},"g":{},"h":{},"roots":{}}}`, true},
		{"capability named twice", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{},"roots":{}}}`, true},
		{"client name twice", `{` + base + `,"io.modelcontextprotocol/clientInfo":{"name":"a","name":"b"}}`, true},
		{"client info and trace context", `{` + base + `,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"traceparent":"00-x","tracestate":"a=1"}`, true},
		{"no capabilities", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, false},
		{"no version", `{"io.modelcontextprotocol/clientCapabilities":{}}`, false},
		{"another version", `{"io.modelcontextprotocol/protocolVersion":"2026-07-29","io.modelcontextprotocol/clientCapabilities":{}}`, false},
		{"version not a string", `{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}`, false},
		{"capabilities null", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}`, false},
		{"capability of the wrong type", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":"yes"}}}`, false},
		{"client info a string", `{` + base + `,"io.modelcontextprotocol/clientInfo":"c"}`, false},
		{"client info of the wrong type", `{` + base + `,"io.modelcontextprotocol/clientInfo":{"name":7}}`, false},
		{"log level", `{` + base + `,"io.modelcontextprotocol/logLevel":"debug"}`, false},
		{"progress token", `{` + base + `,"progressToken":1}`, false},
		{"traceparent not a string", `{` + base + `,"traceparent":1}`, false},
		{"not an object", `[]`, false},
		{"truncated", `{` + base, false},
	}
}()

// TestNewEraCallMeta: what the fast path takes of a 2026-07-28 call's _meta.
func TestNewEraCallMeta(t *testing.T) {
	t.Parallel()
	for _, c := range newEraMetaCases {
		// Invalid JSON never reaches newEraCallMeta: its callers refuse it first.
		var meta sdk.Meta
		ok := false
		if json.Valid([]byte(c.meta)) {
			meta, ok = newEraCallMeta(json.RawMessage(c.meta), "2026-07-28")
		}
		if ok != c.ok {
			t.Errorf("%s: %s taken %v, want %v", c.name, c.meta, ok, c.ok)
			continue
		}
		// The fast path's check, and its decoding on first use, agree.
		if json.Valid([]byte(c.meta)) {
			lazyMeta, lazy, lazyOK := takeNewEraMeta(json.RawMessage(c.meta), "2026-07-28")
			tc := ToolCall{Meta: lazyMeta, lazyMeta: lazy, ProtocolVersion: "2026-07-28"}
			if lazyOK != ok || (ok && !reflect.DeepEqual(tc.CallMeta(), meta)) {
				t.Errorf("%s: taken lazily %v with %#v; decoded at once %v with %#v", c.name, lazyOK, tc.Meta, ok, meta)
			}
		}
		if !ok {
			continue
		}
		// What the fast path hands on is what the go-sdk's decoding of params
		// gives: a map of decoded JSON values.
		var want map[string]any
		if err := json.Unmarshal([]byte(c.meta), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(map[string]any(meta), want) {
			t.Errorf("%s: meta %#v, want %#v", c.name, meta, want)
		}
	}
}

// FuzzNewEraMetaScan: where the one-pass reading of a _meta is sure, it decides
// as the decoding one does.
func FuzzNewEraMetaScan(f *testing.F) {
	for _, c := range newEraMetaCases {
		f.Add(c.meta)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) || len(raw) == 0 || raw[0] != '{' {
			return
		}
		scanned, taken, sure := scanNewEraMeta([]byte(raw), "2026-07-28", true)
		// The check the fast path makes without building the map decides alike.
		checked, checkTaken, checkSure := scanNewEraMeta([]byte(raw), "2026-07-28", false)
		if checked != nil || checkTaken != taken || checkSure != sure {
			t.Fatalf("%s: checking gave (taken %v, sure %v, meta %v), building (taken %v, sure %v)", raw, checkTaken, checkSure, checked, taken, sure)
		}
		if !sure {
			return
		}
		decoded, ok := decodeNewEraMeta(json.RawMessage(raw), "2026-07-28")
		if taken != ok || (scanned != nil) != taken || !reflect.DeepEqual(scanned, decoded) {
			t.Fatalf("%s: scanned %#v (taken %v), decoded %#v (taken %v)", raw, scanned, taken, decoded, ok)
		}
	})
}

// TestUsualClientMetaIsScanned: the _meta that clients usually send (the go-sdk's
// client, Helix's own with the tasks extension) is decided by the one-pass scan,
// without encoding/json.
func TestUsualClientMetaIsScanned(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"v1.8.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
		`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}},"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"helix","version":"dev"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
	} {
		if _, taken, sure := scanNewEraMeta([]byte(raw), "2026-07-28", false); !sure || !taken {
			t.Errorf("%s: scanned sure=%v taken=%v, want both", raw, sure, taken)
		}
	}
}
