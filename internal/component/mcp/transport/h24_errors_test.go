package transport

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// goTypeWords are what an error for a client must not contain: Go type and
// package names of the server's implementation.
var goTypeWords = []string{"Go struct", "Go value", "*mcp.", "mcp.", "initializeParams", "of type"}

func checkPlainError(t *testing.T, what, body string, code int64, wants ...string) {
	t.Helper()
	var resp struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Error == nil {
		t.Fatalf("%s: not an error answer: %s", what, body)
	}
	if resp.Error.Code != code {
		t.Errorf("%s: code %d, want %d: %s", what, resp.Error.Code, code, body)
	}
	for _, w := range goTypeWords {
		if strings.Contains(resp.Error.Message, w) {
			t.Errorf("%s: message names Go types (%q): %s", what, w, resp.Error.Message)
		}
	}
	for _, w := range wants {
		if !strings.Contains(resp.Error.Message, w) {
			t.Errorf("%s: message lacks %q: %s", what, w, resp.Error.Message)
		}
	}
}

// TestInitializeNumericProtocolVersion: "protocolVersion": 2025 names no
// version: UnsupportedProtocolVersionError (-32022, as every malformed version on
// every transport, versions.go) with a message that says what to send, not the
// go-sdk's internal error (-32603 naming mcp.initializeParamsV2).
func TestInitializeNumericProtocolVersion(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{})
	for _, v := range []string{`2025`, `20251125`, `1e400`, `true`, `{"v":1}`, `["2025-06-18"]`} {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":` + v + `,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		r := send(t, http.MethodPost, url, nil, body)
		checkPlainError(t, "protocolVersion "+v, r.body, sdk.CodeUnsupportedProtocolVersion, "protocolVersion", "must be a string", "2025-11-25")
	}
	// The server still works afterwards.
	initSession(t, url)
}

// TestSDKDecodeErrorsAreWordedForClients: the go-sdk's own params decoding errors
// name Go types; the transport words them for the client.
func TestSDKDecodeErrorsAreWordedForClients(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`handling 'initialize': unmarshaling "{}" into a *mcp.initializeParamsV2: json: cannot unmarshal "2025" into Go struct field mcp.initializeParamsV2.protocolVersion of type string`,
			[]string{"initialize", "protocolVersion must be a string"}},
		{`handling 'tools/call': json: cannot unmarshal number into Go struct field CallToolParamsRaw.name of type string`,
			[]string{"tools/call", "name must be a string"}},
		{`handling 'initialize': unmarshaling "{}" into a *mcp.initializeParamsV2: json: cannot unmarshal "x" into Go struct field mcp.initializeParamsV2.capabilities.sampling of type mcp.SamplingCapabilities`,
			[]string{"capabilities.sampling must be an object"}},
		{`json: cannot unmarshal string into Go value of type []interface {}`, []string{"must be an array"}},
	} {
		wire := toWire(&jsonrpc.Response{ID: int64ID(1), Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: tc.in}})
		data, _ := json.Marshal(wire)
		checkPlainError(t, tc.in, string(data), jsonrpc.CodeInvalidParams, tc.want...)
	}
	// Other errors pass unchanged.
	wire := toWire(&jsonrpc.Response{ID: int64ID(1), Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "x"`}})
	if wire.Error.Message != `unknown tool "x"` || wire.Error.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("changed: %+v", wire.Error)
	}
}
