package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const routeSchema = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},` +
	`"n":{"type":"integer","x-mcp-header":"N"},"opts":{"type":"object","properties":{"fast":{"type":"boolean","x-mcp-header":"Fast"}}},"note":{"type":"string"}}}`

func TestParamHeadersOfASchema(t *testing.T) {
	t.Parallel()
	got, err := ParamHeaders(json.RawMessage(routeSchema))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range got {
		names = append(names, strings.Join(b.Path, ".")+"="+b.Header)
	}
	if strings.Join(names, " ") != "n=N opts.fast=Fast region=Region" {
		t.Fatalf("bindings %v", names)
	}
	for _, tc := range []struct{ schema, want string }{
		{`{"properties":{"a":{"type":"string","x-mcp-header":""}}}`, "non-empty string"},
		{`{"properties":{"a":{"type":"string","x-mcp-header":7}}}`, "non-empty string"},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"Bad Name"}}}`, "HTTP header name"},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"Süd"}}}`, "HTTP header name"},
		{`{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`, "string, integer or boolean"},
		{`{"properties":{"a":{"x-mcp-header":"A"}}}`, "string, integer or boolean"},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}`, "both use x-mcp-header"},
	} {
		if _, err := ParamHeaders(json.RawMessage(tc.schema)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.schema, err, tc.want)
		}
	}
	if b, err := ParamHeaders(json.RawMessage(`[1,2]`)); b != nil || err != nil {
		t.Errorf("a schema that is no object: %v %v", b, err)
	}
}

// routeServer serves a tool whose arguments region, n and opts.fast are mirrored
// in Mcp-Param-* headers.
func routeServer(t *testing.T, stateless bool) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "route", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "route", InputSchema: json.RawMessage(routeSchema)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "routed " + string(req.Params.Arguments)}}}, nil
		})
	bindings, err := ParamHeaders(json.RawMessage(routeSchema))
	if err != nil {
		t.Fatal(err)
	}
	return rawServer(t, srv, Options{Stateless: stateless, ParamHeaders: func(name string) []ParamHeader {
		if name == "route" {
			return bindings
		}
		return nil
	}})
}

func TestMcpParamHeaders(t *testing.T) {
	t.Parallel()
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"route","arguments":` + args + `,` + newEraMeta + `}}`
	}
	for _, stateless := range []bool{false, true} {
		url := routeServer(t, stateless)
		for _, tc := range []struct {
			name    string
			args    string
			headers map[string]string
			ok      bool
			says    string
		}{
			{"literal", `{"region":"eu-west"}`, map[string]string{"Mcp-Param-Region": "eu-west"}, true, ""},
			{"header name case", `{"region":"eu-west"}`, map[string]string{"mcp-param-region": "eu-west"}, true, ""},
			{"base64", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8=?="}, true, ""},
			{"base64 of non-ASCII", `{"region":"Zürich"}`, map[string]string{"Mcp-Param-Region": "=?base64?WsO8cmljaA==?="}, true, ""},
			{"no prefix is literal", `{"region":"SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "SGVsbG8="}, true, ""},
			{"no suffix is literal", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8="}, true, ""},
			{"integer", `{"n":42}`, map[string]string{"Mcp-Param-N": "42"}, true, ""},
			{"nested boolean", `{"opts":{"fast":true}}`, map[string]string{"Mcp-Param-Fast": "true"}, true, ""},
			{"unmarked argument needs none", `{"note":"x"}`, nil, true, ""},
			{"null needs none", `{"region":null}`, nil, true, ""},
			{"bad padding", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, false, "Base64"},
			{"bad characters", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, false, "Base64"},
			{"missing header", `{"region":"eu-west"}`, nil, false, "missing Mcp-Param-Region"},
			{"mismatch", `{"region":"eu-west"}`, map[string]string{"Mcp-Param-Region": "us-east"}, false, "does not match"},
			{"base64 mismatch", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG9v?="}, false, "does not match"},
			{"header without argument", `{}`, map[string]string{"Mcp-Param-Region": "eu-west"}, false, "absent or null"},
			{"integer mismatch", `{"n":42}`, map[string]string{"Mcp-Param-N": "42.5"}, false, "does not match"},
			{"integer as text", `{"n":42}`, map[string]string{"Mcp-Param-N": "forty-two"}, false, "does not match"},
			{"boolean case", `{"opts":{"fast":true}}`, map[string]string{"Mcp-Param-Fast": "True"}, false, "does not match"},
			{"object argument", `{"region":{"a":1}}`, map[string]string{"Mcp-Param-Region": `{"a":1}`}, false, "does not match"},
		} {
			hdr := newEraHeaders("tools/call", "route")
			for k, v := range tc.headers {
				hdr[k] = v
			}
			r := send(t, http.MethodPost, url, hdr, call(tc.args))
			a := parseAnswer(t, r.body)
			switch {
			case tc.ok && (r.status != http.StatusOK || a.Error != nil || !strings.Contains(string(a.Result), "routed")):
				t.Errorf("stateless=%v %s: %d %s, want it served", stateless, tc.name, r.status, r.body)
			case !tc.ok && (r.status != http.StatusBadRequest || a.Error == nil || a.Error.Code != sdk.CodeHeaderMismatch ||
				string(a.ID) != "31" || !strings.Contains(a.Error.Message, tc.says)):
				t.Errorf("stateless=%v %s: %d %s, want 400 and -32020 saying %q", stateless, tc.name, r.status, r.body, tc.says)
			}
		}
	}
	// A header sent twice is refused, not read as its first value.
	url := routeServer(t, false)
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(call(`{"region":"eu"}`)))
	for k, v := range newEraHeaders("tools/call", "route") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Mcp-Param-Region", "eu")
	req.Header.Add("Mcp-Param-Region", "us")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("header twice: %d", resp.StatusCode)
	}
}

// An Mcp-Name that does not match a huge name in the body is refused with an
// error that quotes both cut short: the answer does not echo megabytes back.
func TestMcpNameMismatchQuotesShort(t *testing.T) {
	t.Parallel()
	url := routeServer(t, false)
	huge := strings.Repeat("a", 1<<20)
	body := `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"` + huge + `","arguments":{},` + newEraMeta + `}}`
	r := send(t, http.MethodPost, url, newEraHeaders("tools/call", "route"), body)
	a := parseAnswer(t, r.body)
	if r.status != http.StatusBadRequest || a.Error == nil || a.Error.Code != sdk.CodeHeaderMismatch || !strings.Contains(a.Error.Message, "does not match") {
		t.Fatalf("%d %.300s, want 400 and -32020", r.status, r.body)
	}
	if len(r.body) > 4096 {
		t.Fatalf("the error is %d bytes long, want the names cut short", len(r.body))
	}
}
