package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// testTimeout is generous: the suite runs on a loaded 2-core machine with -race.
const testTimeout = testtools.StartupBound

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func step(f func(ctx context.Context, ex *exchange.Exchange) error) []engine.Processor {
	return []engine.Processor{engine.ProcessorFunc(f)}
}

// greetWorkflow is the spec §3.3 tool.
func greetWorkflow() *engine.Workflow {
	return &engine.Workflow{
		ID:          "greet",
		Description: "Greet a person by name",
		FromURI:     "direct://greet",
		Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
			body, _ := ex.In().Body().(map[string]any)
			name, _ := body["name"].(string)
			if name == "" {
				name = "World"
			}
			ex.In().SetBody("Hello, " + name + "!")
			return nil
		}),
	}
}

func newTestContext(t *testing.T, wfs ...*engine.Workflow) *engine.Context {
	t.Helper()
	hc := engine.NewContext("test")
	// Failing and panicking workflows are tested on purpose; their logs are noise.
	hc.SetLogger(slog.New(slog.DiscardHandler))
	for _, wf := range wfs {
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	return hc
}

// connectInMemory serves hc's tools over in-memory transports and returns a client
// session; everything is closed at cleanup.
func connectInMemory(t *testing.T, hc *engine.Context, opts Options) *sdk.ClientSession {
	t.Helper()
	ctx := testCtx(t)
	srv, err := NewSDKServer(hc, opts)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: protocol error %v", name, err)
	}
	return res
}

func resultText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		tc, ok := c.(*sdk.TextContent)
		if !ok {
			t.Fatalf("content %T, want text", c)
		}
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "")
}

func TestSchemeRegistrationAndDirection(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t)
	hc.AddComponent("mcp-server", New(hc))
	if _, ok := hc.Component("mcp-server"); !ok {
		t.Fatal("mcp-server not registered")
	}
	ep, err := hc.Endpoint("mcp-server://127.0.0.1:0?transport=http&name=my-tools&version=1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ep.CreateProducer(); !errors.Is(err, component.ErrConsumerOnly) {
		t.Fatalf("CreateProducer: got %v, want ErrConsumerOnly", err)
	}
	if _, err := ep.CreateConsumer(nil); err != nil {
		t.Fatalf("CreateConsumer: %v", err)
	}
	// Used as a target, the engine reports the direction.
	err = hc.Send(testCtx(t), "mcp-server://127.0.0.1:0", exchange.New(exchange.InOut))
	if !errors.Is(err, component.ErrConsumerOnly) {
		t.Fatalf("Send: got %v", err)
	}
}

func TestURIOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, wantErr         string
		transport, name, ver string
		addr                 string
		stateless            bool
	}{
		{raw: "mcp-server://0.0.0.0:3000", transport: "http", name: "helix-mcp", ver: "1.0.0", addr: "0.0.0.0:3000"},
		{raw: "mcp-server://0.0.0.0:3000?transport=sse&name=my-tools&version=2.1.0", transport: "sse", name: "my-tools", ver: "2.1.0", addr: "0.0.0.0:3000"},
		{raw: "mcp-server://localhost:0?transport=stdio", transport: "stdio", name: "helix-mcp", ver: "1.0.0", addr: ""},
		{raw: "mcp-server://127.0.0.1:1?stateless=true", transport: "http", name: "helix-mcp", ver: "1.0.0", addr: "127.0.0.1:1", stateless: true},
		{raw: "mcp-server://0.0.0.0:3000?transport=grpc", wantErr: `option transport="grpc" is not one of the allowed values (use http, sse or stdio)`},
		{raw: "mcp-server://0.0.0.0:3000?bogus=1", wantErr: `unknown option "bogus"`},
		{raw: "mcp-server://nohostport", wantErr: "want host:port"},
		{raw: "mcp-server://0.0.0.0:3000?stateless=maybe", wantErr: "stateless"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			hc := newTestContext(t)
			c := New(hc)
			u, err := uri.Parse(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := c.CreateEndpoint(u)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := ep.(*serverEndpoint).opts
			if o.Transport != tc.transport || o.Name != tc.name || o.Version != tc.ver || o.Addr != tc.addr || o.Stateless != tc.stateless {
				t.Fatalf("got %+v", o)
			}
		})
	}
}

func TestToolRegistryErrors(t *testing.T) {
	t.Parallel()
	noop := step(func(context.Context, *exchange.Exchange) error { return nil })
	for _, tc := range []struct {
		name    string
		wfs     []*engine.Workflow
		opts    Options
		wantErr []string
	}{
		{
			name:    "clashing names",
			wfs:     []*engine.Workflow{{ID: "a-b", FromURI: "direct://x", Processors: noop}, {ID: "a.b", FromURI: "direct://y", Processors: noop}},
			wantErr: []string{`"a-b"`, `"a.b"`, `"a_b"`},
		},
		{
			name:    "unknown expose",
			wfs:     []*engine.Workflow{greetWorkflow()},
			opts:    Options{Expose: []string{"greet", "nope", "gone"}},
			wantErr: []string{`"nope"`, `"gone"`, `known: "greet"`},
		},
		{
			name:    "expose without trigger",
			wfs:     []*engine.Workflow{{ID: "lib", Processors: noop}},
			opts:    Options{Expose: []string{"lib"}},
			wantErr: []string{`"lib" has no trigger`},
		},
		{
			name:    "bad character",
			wfs:     []*engine.Workflow{{ID: "hello world", FromURI: "direct://x", Processors: noop}},
			wantErr: []string{`contains " "`},
		},
		{
			name: "array input schema",
			wfs: []*engine.Workflow{{ID: "t", FromURI: "direct://x", Processors: noop,
				InputSchema: json.RawMessage(`{"type":"array"}`)}},
			wantErr: []string{`"t"`, `"type": "object"`},
		},
		{
			name:    "override schema not json",
			wfs:     []*engine.Workflow{greetWorkflow()},
			opts:    Options{Tools: map[string]ToolOverride{"greet": {InputSchema: json.RawMessage(`{oops`)}}},
			wantErr: []string{`"greet": input schema is not a JSON object`},
		},
		{
			// The go-sdk panics on such a tool; the server refuses it by name.
			name: "x-mcp-header on a number",
			wfs:  []*engine.Workflow{greetWorkflow()},
			opts: Options{Tools: map[string]ToolOverride{"greet": {InputSchema: json.RawMessage(
				`{"type":"object","properties":{"amount":{"type":"number","x-mcp-header":"Amount"}}}`)}}},
			wantErr: []string{`workflow "greet"`, `"amount"`, `x-mcp-header needs "type": string, integer or boolean`},
		},
		{
			name: "x-mcp-header twice",
			wfs:  []*engine.Workflow{greetWorkflow()},
			opts: Options{Tools: map[string]ToolOverride{"greet": {InputSchema: json.RawMessage(
				`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"region"}}}`)}}},
			wantErr: []string{`workflow "greet"`, `both use x-mcp-header`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := newTestContext(t, tc.wfs...)
			_, err := New(hc).Describe(tc.opts)
			if err == nil {
				t.Fatal("Describe succeeded")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

func TestUnknownExposeFailsStart(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	comp := New(hc)
	hc.AddComponent("mcp-server", comp)
	opts := Options{ID: "s", Addr: "127.0.0.1:0", Expose: []string{"greet", "later"},
		Tools: map[string]ToolOverride{"unrelated": {Description: "ignored"}}}
	info, err := comp.Describe(opts)
	var ue *UnknownExposeError
	if !errors.As(err, &ue) || strings.Join(ue.IDs, ",") != "later" || len(info.Tools) != 1 {
		t.Fatalf("Describe: %v %+v", err, info)
	}
	if err := comp.AddServer(opts); err != nil {
		t.Fatalf("AddServer checks options only: %v", err)
	}
	err = hc.Start(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), `"later"`) {
		t.Fatalf("Start: %v", err)
	}
}

func TestRoundTripInMemory(t *testing.T) {
	t.Parallel()
	var gotHeaders map[string]any
	wf := greetWorkflow()
	inner := wf.Processors[0]
	wf.Processors = step(func(ctx context.Context, ex *exchange.Exchange) error {
		gotHeaders = map[string]any{}
		for k, v := range ex.In().Headers() {
			gotHeaders[k] = v
		}
		if ex.Pattern() != exchange.InOut {
			return fmt.Errorf("pattern %v", ex.Pattern())
		}
		return inner.Process(ctx, ex)
	})
	hc := newTestContext(t, wf)
	cs := connectInMemory(t, hc, Options{Name: "my-tools"})

	res := callTool(t, cs, "greet", map[string]any{"name": "Ada"})
	if res.IsError || resultText(t, res) != "Hello, Ada!" {
		t.Fatalf("got %+v %q", res, resultText(t, res))
	}
	want := map[string]any{exchange.HeaderMcpToolName: "greet", exchange.HeaderMcpRouteID: "greet", exchange.HeaderMcpServerName: "my-tools"}
	for k, v := range want {
		if gotHeaders[k] != v {
			t.Errorf("header %s = %v, want %v", k, gotHeaders[k], v)
		}
	}
	// No arguments at all: the body is an empty map, not nil.
	res = callTool(t, cs, "greet", nil)
	if res.IsError || resultText(t, res) != "Hello, World!" {
		t.Fatalf("got %q", resultText(t, res))
	}
}

func TestReplyBodyShapes(t *testing.T) {
	t.Parallel()
	mk := func(id string, body any) *engine.Workflow {
		return &engine.Workflow{ID: id, FromURI: "direct://" + id, Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody(body)
			return nil
		})}
	}
	hc := newTestContext(t,
		mk("str", "plain"),
		mk("bytes", []byte("raw bytes")),
		mk("map", map[string]any{"total": 3}),
		mk("num", 42),
		mk("none", nil),
	)
	cs := connectInMemory(t, hc, Options{})
	for name, want := range map[string]string{"str": "plain", "bytes": "raw bytes", "map": `{"total":3}`, "num": "42", "none": ""} {
		if got := resultText(t, callTool(t, cs, name, nil)); got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

func TestArgumentsDecoding(t *testing.T) {
	t.Parallel()
	var got any
	hc := newTestContext(t, &engine.Workflow{ID: "echo", FromURI: "direct://echo", Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
		got = ex.In().Body()
		return nil
	})})
	cs := connectInMemory(t, hc, Options{})
	callTool(t, cs, "echo", map[string]any{"limit": 10, "ratio": 0.5, "tags": []any{1, "x"}, "nested": map[string]any{"n": 2}})
	m := got.(map[string]any)
	if m["limit"] != int64(10) || m["ratio"] != 0.5 || m["tags"].([]any)[0] != int64(1) || m["nested"].(map[string]any)["n"] != int64(2) {
		t.Fatalf("decoded %#v", m)
	}
}

func TestErrorPropagation(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t,
		&engine.Workflow{ID: "risky-operation", Description: "An operation that might fail", FromURI: "direct://risky",
			Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
				if v, _ := ex.In().Body().(map[string]any)["value"].(int64); v < 0 {
					return errors.New("Value must be non-negative")
				}
				return nil
			})},
		&engine.Workflow{ID: "boom", FromURI: "direct://boom", Processors: step(func(context.Context, *exchange.Exchange) error {
			panic("kaboom")
		})},
		greetWorkflow(),
	)
	cs := connectInMemory(t, hc, Options{})
	res := callTool(t, cs, "risky_operation", map[string]any{"value": -1})
	if !res.IsError || !strings.Contains(resultText(t, res), "Value must be non-negative") {
		t.Fatalf("got %+v %q", res, resultText(t, res))
	}
	res = callTool(t, cs, "boom", nil)
	if !res.IsError || !strings.Contains(resultText(t, res), "kaboom") {
		t.Fatalf("panic: got %q", resultText(t, res))
	}
	// Arguments that are not an object are the caller's error, not a crash.
	res = callTool(t, cs, "greet", []any{1, 2})
	if !res.IsError || !strings.Contains(resultText(t, res), "must be a JSON object") {
		t.Fatalf("array args: got %q", resultText(t, res))
	}
	// The session still works.
	if got := resultText(t, callTool(t, cs, "greet", map[string]any{"name": "Bo"})); got != "Hello, Bo!" {
		t.Fatalf("after errors: %q", got)
	}
	// An unknown tool is a protocol error (the model named something that is not there).
	if _, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("unknown tool: no error")
	}
}

func TestMultipleRoutesAndFilters(t *testing.T) {
	t.Parallel()
	noop := step(func(context.Context, *exchange.Exchange) error { return nil })
	hc := newTestContext(t,
		greetWorkflow(),
		&engine.Workflow{ID: "calculate-tax", FromURI: "direct://calculate-tax", Processors: noop},
		&engine.Workflow{ID: "api.v2.users", Description: "Users", FromURI: "direct://users", Processors: noop},
		&engine.Workflow{ID: "helper", Processors: noop}, // no trigger: never a tool
		&engine.Workflow{ID: "bridge", FromURI: "mcp-server://127.0.0.1:0"},
	)
	cs := connectInMemory(t, hc, Options{})
	tools := listTools(t, cs)
	if got := strings.Join(toolNamesOf(tools), ","); got != "api_v2_users,calculate_tax,greet" {
		t.Fatalf("tools %s", got)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	if d := byName["calculate_tax"].Description; d != "Helix route: calculate-tax" {
		t.Errorf("fallback description %q", d)
	}
	schema, _ := json.Marshal(byName["calculate_tax"].InputSchema)
	if string(schema) != `{"additionalProperties":true,"type":"object"}` {
		t.Errorf("default schema %s", schema)
	}

	cs = connectInMemory(t, hc, Options{
		Expose: []string{"greet", "calculate-tax"},
		Tools: map[string]ToolOverride{"calculate-tax": {
			Description: "Calculate tax",
			InputSchema: json.RawMessage(`{"properties":{"amount":{"type":"number"}},"required":["amount"]}`),
		}},
	})
	tools = listTools(t, cs)
	if got := strings.Join(toolNamesOf(tools), ","); got != "calculate_tax,greet" {
		t.Fatalf("exposed tools %s", got)
	}
	for _, tl := range tools {
		if tl.Name == "calculate_tax" {
			schema, _ := json.Marshal(tl.InputSchema)
			if tl.Description != "Calculate tax" || string(schema) != `{"properties":{"amount":{"type":"number"}},"required":["amount"],"type":"object"}` {
				t.Errorf("override: %q %s", tl.Description, schema)
			}
		}
	}
}

func listTools(t *testing.T, cs *sdk.ClientSession) []*sdk.Tool {
	t.Helper()
	res, err := cs.ListTools(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

func toolNamesOf(tools []*sdk.Tool) []string {
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

func TestWorkflowsResource(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow(), &engine.Workflow{ID: "send-email", Description: "Send an email notification", FromURI: "direct://send-email"})
	cs := connectInMemory(t, hc, Options{})
	lr, err := cs.ListResources(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	if strings.Join(uris, ",") != "helix://routes,helix://workflows" {
		t.Fatalf("resources %v", uris)
	}
	for _, u := range uris {
		rr, err := cs.ReadResource(testCtx(t), &sdk.ReadResourceParams{URI: u})
		if err != nil {
			t.Fatal(err)
		}
		var entries []WorkflowEntry
		if err := json.Unmarshal([]byte(rr.Contents[0].Text), &entries); err != nil {
			t.Fatal(err)
		}
		want := []WorkflowEntry{
			{ID: "greet", FromURI: "direct://greet", Description: "Greet a person by name", State: "Stopped"},
			{ID: "send-email", FromURI: "direct://send-email", Description: "Send an email notification", State: "Stopped"},
		}
		if fmt.Sprint(entries) != fmt.Sprint(want) || rr.Contents[0].MIMEType != "application/json" {
			t.Fatalf("%s: %+v", u, entries)
		}
	}
}

// searchTool is the spec's tools: search example as pkg/app builds it.
func searchTool(body any) *engine.Workflow {
	return &engine.Workflow{
		ID: "search", Kind: engine.KindTool, Description: "Search knowledge base", FromURI: "tool://search",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Search query"},` +
			`"limit":{"type":"integer","description":"Max results","default":10}},"required":["query"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"results":{"type":"array"},"total":{"type":"integer"}}}`),
		ValidateInput: func(args map[string]any) (map[string]any, error) {
			if _, ok := args["query"].(string); !ok {
				return nil, errors.New(`field "query" is required (string)`)
			}
			if _, ok := args["limit"]; !ok {
				args["limit"] = int64(10)
			}
			return args, nil
		},
		Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
			if body != nil {
				ex.In().SetBody(body)
				return nil
			}
			args := ex.In().Body().(map[string]any)
			ex.In().SetBody(fmt.Sprintf(`{"results":[%q],"total":%d}`, args["query"], args["limit"]))
			return nil
		}),
	}
}

func TestToolsSchemasValidationStructuredOutput(t *testing.T) {
	t.Parallel()
	ran := false
	wf := searchTool(nil)
	inner := wf.Processors[0]
	wf.Processors = step(func(ctx context.Context, ex *exchange.Exchange) error {
		ran = true
		return inner.Process(ctx, ex)
	})
	hc := newTestContext(t, wf, func() *engine.Workflow {
		w := searchTool(map[string]any{"results": "not an array"})
		w.ID, w.FromURI = "broken", "tool://broken"
		return w
	}())
	cs := connectInMemory(t, hc, Options{})

	tools := listTools(t, cs)
	var search *sdk.Tool
	for _, tl := range tools {
		if tl.Name == "search" {
			search = tl
		}
	}
	out, _ := json.Marshal(search.OutputSchema)
	if !strings.Contains(string(out), `"total":{"type":"integer"}`) {
		t.Fatalf("outputSchema %s", out)
	}
	in := search.InputSchema.(map[string]any)
	mirror, _ := json.Marshal(in[OutputSchemaKey])
	if string(mirror) != string(out) {
		t.Fatalf("%s = %s, want %s", OutputSchemaKey, mirror, out)
	}

	// Defaults applied, structured content returned.
	res := callTool(t, cs, "search", map[string]any{"query": "go"})
	if res.IsError {
		t.Fatalf("error: %s", resultText(t, res))
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if string(sc) != `{"results":["go"],"total":10}` || resultText(t, res) != `{"results":["go"],"total":10}` {
		t.Fatalf("structured %s text %q", sc, resultText(t, res))
	}

	// Invalid input: error naming the field, pipeline not run.
	ran = false
	res = callTool(t, cs, "search", map[string]any{"limit": 3})
	if !res.IsError || !strings.Contains(resultText(t, res), `"query"`) || ran {
		t.Fatalf("validation: %q ran=%v", resultText(t, res), ran)
	}

	// A reply that breaks the output schema is reported, not passed on.
	res = callTool(t, cs, "broken", map[string]any{"query": "x"})
	if !res.IsError || !strings.Contains(resultText(t, res), "output schema") {
		t.Fatalf("broken: %q", resultText(t, res))
	}
}

func TestToolAllowedHook(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow(), &engine.Workflow{ID: "admin-tool", FromURI: "direct://admin",
		Processors: step(func(context.Context, *exchange.Exchange) error { return nil })})
	cs := connectInMemory(t, hc, Options{ToolAllowed: func(_ context.Context, name string) error {
		if name == "admin_tool" {
			return fmt.Errorf("tool %s is blocked", name)
		}
		return nil
	}})
	if got := strings.Join(toolNamesOf(listTools(t, cs)), ","); got != "greet" {
		t.Fatalf("listed %s", got)
	}
	// A refused tool answers like a tool that does not exist.
	_, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "admin_tool"})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "admin_tool"`) {
		t.Fatalf("blocked call: %v", err)
	}
}

// The tool hook sees the caller's token through the request's TokenInfo (the
// go-sdk's documented carrier), even when the handler context does not descend
// from the HTTP request: that is what makes per-tool OAuth scopes work for every
// protocol version and transport.
func TestToolAllowedSeesTokenInfo(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	var seen []string
	allowed := func(ctx context.Context, name string) error {
		c := security.ClaimsFromContext(ctx)
		if c == nil {
			seen = append(seen, name+":none")
			return fmt.Errorf("tool %s requires scope greet", name)
		}
		seen = append(seen, name+":"+strings.Join(c.Scopes, " "))
		return nil
	}
	ti := &auth.TokenInfo{Scopes: []string{"greet"}, UserID: "iss|ada", Expiration: time.Now().Add(time.Hour)}
	tools, err := buildTools(tool.FromWorkflows(hc), &Options{Expose: []string{"greet"}})
	if err != nil {
		t.Fatal(err)
	}
	caller := &toolCaller{caller: &tool.Caller{Server: "s"}, allowed: allowed, logger: slog.New(slog.DiscardHandler)}
	handler := caller.handler(tools[0])

	res, err := handler(context.Background(), &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "greet"},
		Extra: &sdk.RequestExtra{TokenInfo: ti}})
	if err != nil || res.IsError {
		t.Errorf("call with token refused: %v %+v", err, res)
	}
	if _, err = handler(context.Background(), &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "greet"}}); err == nil {
		t.Error("call without token allowed")
	}

	list := hideDisallowedTools(allowed)(func(context.Context, string, sdk.Request) (sdk.Result, error) {
		return &sdk.ListToolsResult{Tools: []*sdk.Tool{{Name: "greet"}}}, nil
	})
	got, err := list(context.Background(), "tools/list", &sdk.ListToolsRequest{Params: &sdk.ListToolsParams{},
		Extra: &sdk.RequestExtra{TokenInfo: ti}})
	if err != nil || len(got.(*sdk.ListToolsResult).Tools) != 1 {
		t.Errorf("list with token: %v %+v", err, got)
	}
	got, _ = list(context.Background(), "tools/list", &sdk.ListToolsRequest{Params: &sdk.ListToolsParams{}})
	if len(got.(*sdk.ListToolsResult).Tools) != 0 {
		t.Errorf("list without token shows %+v", got)
	}
	if want := "greet:greet,greet:none,greet:greet,greet:none"; strings.Join(seen, ",") != want {
		t.Errorf("hook saw %s, want %s", strings.Join(seen, ","), want)
	}
}

func TestCapabilitiesPromptsLogging(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	cs := connectInMemory(t, hc, Options{Name: "caps", Version: "9.9.9"})
	init := cs.InitializeResult()
	caps := init.Capabilities
	//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
	if caps.Prompts == nil || caps.Logging == nil || caps.Tools == nil || caps.Resources == nil {
		t.Fatalf("capabilities %+v", caps)
	}
	if init.ServerInfo.Name != "caps" || init.ServerInfo.Version != "9.9.9" {
		t.Fatalf("server info %+v", init.ServerInfo)
	}
	pr, err := cs.ListPrompts(testCtx(t), nil)
	if err != nil || len(pr.Prompts) != 0 {
		t.Fatalf("prompts %v %v", pr, err)
	}
	//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
	if err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Ping(testCtx(t), nil); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledCallStopsWorkflow(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	cancelled := make(chan struct{})
	hc := newTestContext(t, &engine.Workflow{ID: "slow", FromURI: "direct://slow", Processors: step(func(ctx context.Context, _ *exchange.Exchange) error {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	})})
	cs := connectInMemory(t, hc, Options{})
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow"})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	select {
	case <-cancelled:
	case <-time.After(testTimeout):
		t.Fatal("the workflow's context was not cancelled with the call")
	}
}

// newProtocolResultKeys are the result fields of MCP 2026-07-28 that sessions of
// earlier versions must not see (transport/protocol_fields.go strips them).
var newProtocolResultKeys = []string{"resultType", "ttlMs", "cacheScope"}
