package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func echo(ctx context.Context, args map[string]any) (tool.Result, error) {
	data, _ := json.Marshal(args)
	return tool.TextResult(string(data)), nil
}

func mustAdd(t *testing.T, c *tool.Catalogue, tools ...*tool.Tool) {
	t.Helper()
	for _, tl := range tools {
		if err := c.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
}

func names(s *tool.Set) string {
	var n []string
	for _, t := range s.Tools() {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

func TestSelect(t *testing.T) {
	c := tool.NewCatalogue()
	mustAdd(t, c,
		&tool.Tool{ID: "format-code", Invoke: echo},
		&tool.Tool{ID: "search", Invoke: echo},
	)
	c.Exclude("lib", errors.New(`"lib" has no trigger`))

	all, err := c.Select(nil)
	if err != nil || names(all) != "format_code,search" {
		t.Fatalf("all: %v %v", names(all), err)
	}
	// The id is an alias of the name; excluded ids are not tools.
	if all.Lookup("format-code") != all.Lookup("format_code") || all.Lookup("format_code") == nil || all.Lookup("lib") != nil {
		t.Error("lookup by name and alias")
	}
	if got := all.Aliases(); !reflect.DeepEqual(got, map[string]string{"format-code": "format_code"}) {
		t.Errorf("aliases %v", got)
	}

	some, err := c.Select([]string{"search", "search"})
	if err != nil || names(some) != "search" {
		t.Fatalf("one: %v %v", names(some), err)
	}
	if none, err := c.Select([]string{}); err != nil || len(none.Tools()) != 0 {
		t.Fatalf("empty selection: %v %v", none, err)
	}

	if _, err := c.Select([]string{"lib", "search"}); err == nil || !strings.Contains(err.Error(), "no trigger") {
		t.Fatalf("excluded: %v", err)
	}
	s, err := c.Select([]string{"search", "nope"})
	var unknown *tool.UnknownError
	if !errors.As(err, &unknown) || strings.Join(unknown.IDs, ",") != "nope" || s == nil || names(s) != "search" ||
		!strings.Contains(err.Error(), `known: "format-code", "search"`) {
		t.Fatalf("unknown: %v %v", s, err)
	}

	if err := c.Add(&tool.Tool{ID: "search", Invoke: echo}); err == nil {
		t.Error("duplicate id accepted")
	}
}

func TestSelectClashAndBroken(t *testing.T) {
	c := tool.NewCatalogue()
	mustAdd(t, c,
		&tool.Tool{ID: "a.b", Invoke: echo},
		&tool.Tool{ID: "a/b", Invoke: echo},
		&tool.Tool{ID: "bad name", Invoke: echo},
		&tool.Tool{ID: "arr", Invoke: echo, InputSchema: json.RawMessage(`{"type":"array"}`)},
	)
	var clash *tool.NameClashError
	if _, err := c.Select([]string{"a.b", "a/b"}); !errors.As(err, &clash) || clash.Name != "a_b" || clash.IDs != [2]string{"a.b", "a/b"} {
		t.Fatalf("clash: %v", err)
	}
	// Each alone is fine: a clash concerns what one selection serves.
	if _, err := c.Select([]string{"a.b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select([]string{"bad name"}); err == nil || !strings.Contains(err.Error(), `contains " "`) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := c.Select([]string{"arr"}); err == nil || !strings.Contains(err.Error(), `"type": "object"`) {
		t.Fatalf("array schema: %v", err)
	}
	if tl, _ := c.Tool("arr"); tl.Problem() == nil {
		t.Error("broken tool has no problem")
	}
}

func TestCallDecodesValidatesAndShapes(t *testing.T) {
	in, err := tool.CompileInput(json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer","default":3}},"required":["q"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	c := tool.NewCatalogue()
	mustAdd(t, c, &tool.Tool{ID: "find", Validate: in.Validate,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"hits":{"type":"array"}},"required":["hits"]}`),
		Invoke: func(_ context.Context, args map[string]any) (tool.Result, error) {
			got = args
			if args["q"] == "broken" {
				return tool.Result{Structured: `{"hits":"none"}`}, nil
			}
			if args["q"] == "text" {
				return tool.Result{Structured: "not json"}, nil
			}
			return tool.Result{Structured: map[string]any{"hits": []string{args["q"].(string)}}}, nil
		}})
	find, _ := c.Tool("find")
	ctx := context.Background()

	res, cause := find.Call(ctx, json.RawMessage(`{"q":"go","big":12345678901234567,"f":1.5}`))
	if cause != nil || res.IsError {
		t.Fatalf("call: %+v %v", res, cause)
	}
	// Integral numbers are int64 (defaults too), others float64.
	if got["n"] != int64(3) || got["big"] != int64(12345678901234567) || got["f"] != 1.5 {
		t.Errorf("arguments %#v", got)
	}
	if len(res.Content) != 1 || res.Content[0].Text != `{"hits":["go"]}` || !reflect.DeepEqual(res.Structured, map[string]any{"hits": []any{"go"}}) {
		t.Errorf("shaped %+v", res)
	}

	for _, tc := range []struct{ args, want string }{
		{`[1]`, "tool arguments must be a JSON object, got an array"},
		{`{"n":1}`, "invalid arguments for tool find:"},
		{`{"q":"broken"}`, "tool find: reply does not match its output schema"},
		{`{"q":"text"}`, "tool find declares an output schema but its reply is not JSON"},
	} {
		res, cause := find.Call(ctx, json.RawMessage(tc.args))
		if !res.IsError || cause != nil || !strings.Contains(res.Content[0].Text, tc.want) {
			t.Errorf("%s: %+v %v, want %q", tc.args, res, cause, tc.want)
		}
	}
	// No arguments at all are an empty object (then the schema speaks).
	if res, _ := find.Call(ctx, nil); !res.IsError || !strings.Contains(res.Content[0].Text, "q") {
		t.Errorf("null arguments: %+v", res)
	}
}

// clientErr is an error whose client message hides its details.
type clientErr struct{}

func (clientErr) Error() string         { return "helix.yaml:3:5: step 2: boom" }
func (clientErr) ClientMessage() string { return "boom" }

func TestCallFailures(t *testing.T) {
	c := tool.NewCatalogue()
	mustAdd(t, c,
		&tool.Tool{ID: "fails", Invoke: func(context.Context, map[string]any) (tool.Result, error) { return tool.Result{}, clientErr{} }},
		&tool.Tool{ID: "panics", Invoke: func(context.Context, map[string]any) (tool.Result, error) { panic("oops") }},
		&tool.Tool{ID: "reports", Invoke: func(context.Context, map[string]any) (tool.Result, error) {
			return tool.ErrorResult("nothing found"), nil
		}},
		&tool.Tool{ID: "bad-validator", Invoke: echo, Validate: func(map[string]any) (map[string]any, error) { panic("validator") }},
	)
	call := func(id string) (tool.Result, error) {
		tl, _ := c.Tool(id)
		return tl.Call(context.Background(), json.RawMessage(`{}`))
	}
	if res, cause := call("fails"); !res.IsError || res.Content[0].Text != "boom" || !errors.Is(cause, clientErr{}) {
		t.Errorf("fails: %+v %v", res, cause)
	}
	if res, cause := call("panics"); !res.IsError || !engine.IsPanic(cause) {
		t.Errorf("panics: %+v %v", res, cause)
	}
	if res, cause := call("reports"); !res.IsError || cause != nil || res.Content[0].Text != "nothing found" {
		t.Errorf("reports: %+v %v", res, cause)
	}
	if res, _ := call("bad-validator"); !res.IsError || !strings.Contains(res.Content[0].Text, "input validation panicked") {
		t.Errorf("bad validator: %+v", res)
	}
}

func TestWithInputEnforcesTheOverride(t *testing.T) {
	c := tool.NewCatalogue()
	own := func(args map[string]any) (map[string]any, error) {
		if args["amount"] == int64(0) {
			return nil, errors.New("amount must not be 0")
		}
		return args, nil
	}
	mustAdd(t, c, &tool.Tool{ID: "tax", Description: "own", Validate: own, Invoke: echo})
	base, _ := c.Tool("tax")
	v, err := base.WithInput("Calculate tax", json.RawMessage(`{"properties":{"amount":{"type":"number"},"rate":{"type":"number","default":0.2}},"required":["amount"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if v.Description != "Calculate tax" || base.Description != "own" ||
		string(v.Input()) != `{"properties":{"amount":{"type":"number"},"rate":{"default":0.2,"type":"number"}},"required":["amount"],"type":"object"}` {
		t.Errorf("view: %q %s", v.Description, v.Input())
	}
	ctx := context.Background()
	if res, _ := v.Call(ctx, json.RawMessage(`{}`)); !res.IsError || !strings.Contains(res.Content[0].Text, "amount") {
		t.Errorf("override not enforced: %+v", res)
	}
	if res, _ := v.Call(ctx, json.RawMessage(`{"amount":0}`)); !res.IsError || !strings.Contains(res.Content[0].Text, "must not be 0") {
		t.Errorf("own validation skipped: %+v", res)
	}
	if res, _ := v.Call(ctx, json.RawMessage(`{"amount":10}`)); res.IsError || res.Content[0].Text != `{"amount":10,"rate":0.2}` {
		t.Errorf("call: %+v", res)
	}
	if _, err := base.WithInput("", json.RawMessage(`{oops`)); err == nil || !strings.Contains(err.Error(), `"tax": input schema is not a JSON object`) {
		t.Errorf("bad override: %v", err)
	}
}

func TestFromWorkflows(t *testing.T) {
	hc := engine.NewContext("t")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	var headers map[string]any
	greet := &engine.Workflow{ID: "greet", FromURI: "direct://greet", Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			headers = ex.In().Headers()
			ex.In().SetBody(fmt.Sprintf("Hello, %v!", ex.In().Body().(map[string]any)["name"]))
			return nil
		})}}
	for _, wf := range []*engine.Workflow{
		greet,
		{ID: "lib", Processors: greet.Processors},
	} {
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer hc.Stop(context.Background())

	c := tool.FromWorkflows(hc)
	all, err := c.Select(nil)
	if err != nil || names(all) != "greet" {
		t.Fatalf("tools %s %v", names(all), err)
	}
	if _, err := c.Select([]string{"lib"}); err == nil || !strings.Contains(err.Error(), `"lib" has no trigger`) {
		t.Errorf("workflow without trigger: %v", err)
	}
	if _, err := tool.FromWorkflow(hc, &engine.Workflow{ID: "srv", FromURI: "mcp-server://127.0.0.1:0"}); err == nil ||
		!strings.Contains(err.Error(), "itself an MCP server") {
		t.Errorf("mcp-server workflow: %v", err)
	}
	g := all.Lookup("greet")
	if g.Description != "Helix route: greet" {
		t.Errorf("description %q", g.Description)
	}
	ctx := tool.WithCaller(context.Background(), &tool.Caller{Server: "demo"})
	res, cause := g.Call(ctx, json.RawMessage(`{"name":"Ada"}`))
	if cause != nil || res.IsError || res.Content[0].Text != "Hello, Ada!" {
		t.Fatalf("call: %+v %v", res, cause)
	}
	if headers[exchange.HeaderMcpToolName] != "greet" || headers[exchange.HeaderMcpRouteID] != "greet" || headers[exchange.HeaderMcpServerName] != "demo" {
		t.Errorf("headers %v", headers)
	}
}

// A workflow tool's run ends when the engine gives up draining at Stop, though the
// caller's ctx never ends; the headers name the caller made with NewCaller.
func TestFromWorkflowEndsWhenStopAbandons(t *testing.T) {
	hc := engine.NewContext("t")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	started := make(chan map[string]any, 1)
	wf := &engine.Workflow{ID: "wait-here", FromURI: "direct://wait-here", Processors: []engine.Processor{
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			started <- ex.In().Headers()
			<-ctx.Done()
			return ctx.Err()
		})}}
	if err := hc.AddWorkflow(wf); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g, ok := tool.FromWorkflows(hc).Tool("wait-here")
	if !ok {
		t.Fatal("no tool")
	}
	ended := make(chan error, 1)
	go func() {
		_, cause := g.Call(tool.WithCaller(context.Background(), tool.NewCaller("demo")), nil)
		ended <- cause
	}()
	headers := <-started
	if headers[exchange.HeaderMcpToolName] != "wait_here" || headers[exchange.HeaderMcpRouteID] != "wait-here" ||
		headers[exchange.HeaderMcpServerName] != "demo" {
		t.Errorf("headers %v", headers)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := hc.Stop(stopCtx); err != nil {
		t.Errorf("stop: %v", err)
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, context.Canceled) {
			t.Errorf("cause %v", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool call went on after Stop gave up draining")
	}
}

// TestCallRefusesNonFiniteNumbers: 1e400 does not fit a float64; it is an
// invalid argument (a tool error naming where it is), never +Inf handed to the
// workflow.
func TestCallRefusesNonFiniteNumbers(t *testing.T) {
	c := tool.NewCatalogue()
	var got map[string]any
	mustAdd(t, c, &tool.Tool{ID: "num", Invoke: func(_ context.Context, args map[string]any) (tool.Result, error) {
		got = args
		return tool.TextResult("ran"), nil
	}})
	tl, _ := c.Tool("num")
	for _, args := range []string{`{"x":1e400}`, `{"x":-1e400}`, `{"list":[1,{"y":2e308}]}`, `{"x":1E+999999}`} {
		got = nil
		res, _ := tl.Call(context.Background(), json.RawMessage(args))
		if !res.IsError || got != nil {
			t.Errorf("%s: ran with %v: %+v", args, got, res)
			continue
		}
		if msg := res.Content[0].Text; !strings.Contains(msg, "invalid arguments") || !strings.Contains(msg, "too large") || strings.Contains(msg, "Inf") {
			t.Errorf("%s: message %q", args, msg)
		}
	}
	// Large but finite numbers and integers beyond int64 still pass.
	if res, _ := tl.Call(context.Background(), json.RawMessage(`{"x":1e308,"y":99999999999999999999}`)); res.IsError {
		t.Errorf("finite numbers refused: %+v", res)
	}
}
