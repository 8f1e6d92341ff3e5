package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/arvenza/helix/internal/testtools"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/exchange"
)

// A workflow with input: and output: (the syntax of tools: entries) is an MCP tool
// that advertises both schemas, refuses arguments that break the input schema with
// the isError result a tools: entry gives, applies defaults, and checks its reply
// against the output schema.
const workflowSchemasYAML = `
helix:
  mcp:
    servers:
      - enabled: true
        addr: "127.0.0.1:0"
        name: wf-schemas
workflows:
  - id: quote
    description: "Price an order"
    trigger: direct://quote
    input:
      item: { type: string, required: true, description: "What to price" }
      quantity: { type: integer, default: 1 }
    output:
      item: string
      total: { type: number, required: true }
    steps:
      - transform:
          starlang: |
            if payload["item"] == "broken":
                write({"item": "broken"}, "application/json")
            else:
                write({"item": payload["item"], "total": payload["quantity"] * 2.5}, "application/json")
tools:
  - id: twin
    description: "The same input as a tools: entry"
    input:
      item: { type: string, required: true, description: "What to price" }
      quantity: { type: integer, default: 1 }
    output:
      ok: boolean
    steps:
      - log: twin
`

func TestWorkflowInputOutputSchemasOverMCP(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, workflowSchemasYAML)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	cs := mcpSession(t, a, "wf-schemas")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var quote, twin *sdk.Tool
	for _, tl := range lt.Tools {
		switch tl.Name {
		case "quote":
			quote = tl
		case "twin":
			twin = tl
		}
	}
	if quote == nil || twin == nil {
		t.Fatalf("tools/list: %+v", lt.Tools)
	}
	in, want := inputOnly(t, quote.InputSchema), inputOnly(t, twin.InputSchema)
	if in != want {
		t.Errorf("input schema of the workflow\n%s\nwant the tools: entry's\n%s", in, want)
	}
	if !strings.Contains(in, `"required":["item"]`) {
		t.Errorf("input schema %s", in)
	}
	out, _ := json.Marshal(quote.OutputSchema)
	if !strings.Contains(string(out), `"total":{"type":"number"}`) || !strings.Contains(string(out), `"required":["total"]`) {
		t.Errorf("output schema %s", out)
	}

	call := func(name string, args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return res
	}
	text := func(res *sdk.CallToolResult) string { return res.Content[0].(*sdk.TextContent).Text }

	res := call("quote", map[string]any{"item": "tea"}) // quantity defaults to 1
	if sc, _ := json.Marshal(res.StructuredContent); res.IsError || string(sc) != `{"item":"tea","total":2.5}` {
		t.Errorf("quote tea: isError=%v %s %q", res.IsError, sc, text(res))
	}
	for _, bad := range []map[string]any{{}, {"item": "tea", "quantity": "two"}, {"item": 3}} {
		got, want := call("quote", bad), call("twin", bad)
		if !got.IsError || !want.IsError {
			t.Fatalf("%v: isError %v (workflow) %v (tool)", bad, got.IsError, want.IsError)
		}
		// The same message as the tools: entry's, but for the tool's name.
		if w := strings.Replace(text(want), "tool twin", "tool quote", 1); text(got) != w {
			t.Errorf("%v:\n got %q\nwant %q", bad, text(got), w)
		}
	}
	res = call("quote", map[string]any{"item": "broken"})
	if !res.IsError || !strings.Contains(text(res), "output schema") || !strings.Contains(text(res), "total") {
		t.Errorf("a reply without total: isError=%v %q", res.IsError, text(res))
	}
}

// A workflow with input: checks what its trigger delivers too (here direct:// and
// http-server://), with the error a tools: entry's validation returns, and its
// steps see the arguments with defaults applied.
func TestWorkflowInputValidatesTriggeredBodies(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	a, err := buildYAML(t, `
workflows:
  - id: quote
    trigger: direct://quote
    input:
      item: { type: string, required: true }
      quantity: { type: integer, default: 1 }
    steps:
      - transform:
          starlang: |
            write({"item": payload["item"], "quantity": payload["quantity"]}, "application/json")
  - id: hook
    trigger: http-server://`+addr+`/quote
    input:
      item: { type: string, required: true }
    steps:
      - target: direct://quote
tools:
  - id: twin
    description: twin
    input:
      item: { type: string, required: true }
      quantity: { type: integer, default: 1 }
    output:
      ok: boolean
    steps:
      - log: twin
`)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	hc := a.Context()
	ctx := context.Background()

	ex := exchange.NewWithBody(exchange.InOut, `{"item":"tea"}`)
	if err := hc.Send(ctx, "direct://quote", ex); err != nil {
		t.Fatal(err)
	}
	if got := exchange.Stringify(ex.In().Body()); got != `{"item":"tea","quantity":1}` {
		t.Errorf("body %s", got)
	}

	twin, _ := hc.Workflow("twin")
	for _, bad := range []map[string]any{{}, {"item": "tea", "quantity": "two"}} {
		_, want := twin.ValidateInput(bad)
		ex := exchange.NewWithBody(exchange.InOut, bad)
		err := hc.Send(ctx, "direct://quote", ex)
		if err == nil || want == nil {
			t.Fatalf("%v: err %v, tools: entry's %v", bad, err, want)
		}
		if !chainHas(err, want) {
			t.Errorf("%v: %v\ndoes not carry the tools: entry's error (%T) %v", bad, err, want, want)
		}
		if !strings.Contains(err.Error(), "invalid input") {
			t.Errorf("%v: %v", bad, err)
		}
	}
	for _, body := range []any{"not json", `[1,2]`, 42} {
		ex := exchange.NewWithBody(exchange.InOut, body)
		if err := hc.Send(ctx, "direct://quote", ex); err == nil || !strings.Contains(err.Error(), "JSON object") {
			t.Errorf("body %v: %v", body, err)
		}
	}

	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post("http://"+addr+"/quote", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(`{"item":"tea"}`); code != 200 || body != `{"item":"tea","quantity":1}` {
		t.Errorf("POST valid: %d %s", code, body)
	}
	if code, body := post(`{"quantity":2}`); code < 400 || !strings.Contains(body, "item") || !strings.Contains(body, "invalid input") {
		t.Errorf("POST without item: %d %s", code, body)
	}
}

// inputOnly is an advertised input schema without the mirrored output schema.
func inputOnly(t *testing.T, schema any) string {
	t.Helper()
	b, _ := json.Marshal(schema)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "x-helix-output-schema")
	b, _ = json.Marshal(m)
	return string(b)
}

// chainHas reports whether err's chain holds an error of want's type and text.
func chainHas(err, want error) bool {
	for _, e := range unwrapAll(err) {
		if reflect.TypeOf(e) == reflect.TypeOf(want) && e.Error() == want.Error() {
			return true
		}
	}
	return false
}

func unwrapAll(err error) []error {
	if err == nil {
		return nil
	}
	out := []error{err}
	switch x := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, unwrapAll(x.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range x.Unwrap() {
			out = append(out, unwrapAll(e)...)
		}
	}
	return out
}

// Mistakes in a workflow's input: and output: are reported where they are, as for
// tools: entries.
func TestWorkflowSchemaMistakes(t *testing.T) {
	t.Parallel()
	_, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: quote
    trigger: direct://quote
    input:
      item: { type: strng }
      n: { type: integer, default: "x" }
    output: [a, b]
    steps:
      - log: hi
`))
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want config errors, got %v", err)
	}
	for _, want := range []string{
		`helix.yaml:6:21: workflows[0].input.item.type: unknown field type "strng"`,
		`helix.yaml:7:36: workflows[0].input.n.default: default x is not of type integer`,
		`helix.yaml:8:13: workflows[0].output`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %s in\n%v", want, err)
		}
	}
}

// freeAddr is a loopback host:port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(testtools.FreePort(t))
}

// The README's MCP example declares input: and output: on calculate-tax: the
// schema is advertised and enforced, and the result is structured.
func TestMCPServerExampleSchemas(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../examples/mcp-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const exampleAddr = `addr: "127.0.0.1:${env:MCP_SERVER_PORT:-3000}"`
	if !strings.Contains(string(src), exampleAddr) {
		t.Fatalf("examples/mcp-server.yaml no longer contains %s; update this test", exampleAddr)
	}
	a, err := buildYAML(t, strings.Replace(string(src), exampleAddr, `addr: "127.0.0.1:0"`, 1))
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	cs := mcpSession(t, a, "my-helix-tools")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.Name != "calculate_tax" {
			continue
		}
		if in := inputOnly(t, tl.InputSchema); !strings.Contains(in, `"required":["amount"]`) || tl.OutputSchema == nil {
			t.Errorf("calculate_tax schemas: %s %v", in, tl.OutputSchema)
		}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculate_tax", Arguments: map[string]any{"amount": 200}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := json.Marshal(res.StructuredContent); res.IsError || string(sc) != `{"amount":200,"rate":0.1,"tax":20}` {
		t.Errorf("calculate_tax amount=200: isError=%v %s", res.IsError, sc)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculate_tax", Arguments: map[string]any{"rate": 0.2}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !res.IsError || !strings.Contains(text, "amount") {
		t.Errorf("calculate_tax without amount: isError=%v %q", res.IsError, text)
	}
}

// An mcp-server:// workflow is a server, not a tool: input: there would be ignored,
// so it is an error at its position.
func TestWorkflowSchemaOnMCPServerTrigger(t *testing.T) {
	t.Parallel()
	_, err := buildYAML(t, `workflows:
  - id: srv
    trigger: mcp-server://127.0.0.1:0
    input:
      q: string
`)
	if err == nil || !strings.Contains(err.Error(), "helix.yaml:5:7: workflows[0].input: ") || !strings.Contains(err.Error(), "mcp-server://") {
		t.Errorf("want an error at input:, got %v", err)
	}
}
