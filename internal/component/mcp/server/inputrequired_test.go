package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Input-required results (MCP 2026-07-28, SEP-2322) with raw HTTP requests, as a
// client of that protocol sends them, against a stateless server.

// irWorkflows are the asking workflows of these tests.
func irWorkflows(t *testing.T) func(hc *engine.Context) []*engine.Workflow {
	return func(hc *engine.Context) []*engine.Workflow {
		return []*engine.Workflow{
			askWorkflow(t, hc, "greet", `
- elicit:
    id: user_name
    message: "What is your name?"
    schema: {properties: {name: {type: string}}, required: [name]}
- transform:
    starlang: |
      "Hello, %s! (%s, state %s)" % (payload["name"], header("HelixMcpClientCapabilities"), header("HelixMcpRequestState"))
`),
			askWorkflow(t, hc, "two_rounds", `
- elicit: {id: name, message: "Name?", schema: {properties: {name: {type: string}}, required: [name]}, into: name}
- elicit: {id: color, message: "Color?", schema: {properties: {color: {type: string}}, required: [color]}}
- transform:
    starlang: |
      "%s likes %s" % (variables["name"]["name"], payload["color"])
`),
			askWorkflow(t, hc, "all_three", `
- multicast:
    strategy: parallel
    stop_on_error: true
    steps:
      - elicit: {id: who, message: "Who?", schema: {properties: {name: {type: string}}}}
      - sample: {id: model, prompt: "Hi"}
      - roots: {id: dirs}
- transform:
    starlang: |
      json.encode(payload)
`),
			askWorkflow(t, hc, "sampler", `
- sample: "What is the capital of France?"
`),
		}
	}
}

type rpcReply struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	status      int
	session     string // Mcp-Session-Id of the answer (tasks_test.go)
	contentType string // of the answer (tasks_test.go)
}

var allCaps = map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}, "roots": map[string]any{}}

// irCall posts one tools/call of MCP 2026-07-28 to the stateless server.
func irCall(t *testing.T, comp *server.Component, tool string, caps map[string]any, extra map[string]any) rpcReply {
	t.Helper()
	return irCallOn(t, comp, "stateless", nil, tool, caps, extra)
}

// irCallOn is irCall to server id with more HTTP headers.
func irCallOn(t *testing.T, comp *server.Component, id string, headers map[string]string, tool string, caps map[string]any, extra map[string]any) rpcReply {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{},
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": caps}}
	for k, v := range extra {
		params[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+comp.Addr(id).String()+"/mcp", bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(raw, []byte("data: ")); strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && i >= 0 {
		raw = raw[i+6:]
	}
	var r rpcReply
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v: %s", tool, err, raw)
	}
	r.status = resp.StatusCode
	return r
}

func resultText(r rpcReply) string {
	content, _ := r.Result["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			b.WriteString(m["text"].(string))
		}
	}
	return b.String()
}

func inputRequests(t *testing.T, r rpcReply) (map[string]any, string) {
	t.Helper()
	if r.Error != nil || r.Result["resultType"] != "input_required" {
		t.Fatalf("want an input_required result, got %+v (error %+v)", r.Result, r.Error)
	}
	reqs, _ := r.Result["inputRequests"].(map[string]any)
	state, _ := r.Result["requestState"].(string)
	if len(reqs) == 0 || state == "" {
		t.Fatalf("input_required result without inputRequests or requestState: %+v", r.Result)
	}
	return reqs, state
}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

func TestInputRequiredRoundTrip(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, irWorkflows(t))

	reqs, state := inputRequests(t, irCall(t, comp, "greet", allCaps, nil))
	q, _ := reqs["user_name"].(map[string]any)
	if q["method"] != "elicitation/create" || q["params"].(map[string]any)["message"] != "What is your name?" {
		t.Fatalf("round 1 asked %+v", reqs)
	}
	r := irCall(t, comp, "greet", allCaps, map[string]any{"requestState": state,
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Alice"}), "extra_key": accept(nil)}})
	if got := resultText(r); r.Error != nil || got != "Hello, Alice! (elicitation,roots,sampling, state verified)" {
		t.Fatalf("round 2: %q %+v", got, r.Error)
	}
	if rt := r.Result["resultType"]; rt != nil && rt != "complete" {
		t.Errorf("round 2 resultType %v", rt)
	}

	// The state is single-use.
	r = irCall(t, comp, "greet", allCaps, map[string]any{"requestState": state,
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Alice"})}})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "already used") {
		t.Fatalf("replayed state: %+v", r)
	}
	// A tampered one is refused, saying what to do.
	_, state = inputRequests(t, irCall(t, comp, "greet", allCaps, nil))
	r = irCall(t, comp, "greet", allCaps, map[string]any{"requestState": state + "-TAMPERED",
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Alice"})}})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "without requestState") {
		t.Fatalf("tampered state: %+v", r)
	}
	// A state of another tool is refused.
	_, state = inputRequests(t, irCall(t, comp, "greet", allCaps, nil))
	r = irCall(t, comp, "two_rounds", allCaps, map[string]any{"requestState": state})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "issued for tools/call \"greet\"") {
		t.Fatalf("state of another tool: %+v", r)
	}
	// Answers without a state count (the client answers what it was asked);
	// a missing answer just asks again.
	if got := resultText(irCall(t, comp, "greet", allCaps, map[string]any{
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Bob"})}})); !strings.HasPrefix(got, "Hello, Bob!") {
		t.Errorf("answer without state: %q", got)
	}
	reqs, _ = inputRequests(t, irCall(t, comp, "greet", allCaps, map[string]any{
		"inputResponses": map[string]any{"wrong_key": accept(map[string]any{"name": "Bob"})}}))
	if _, ok := reqs["user_name"]; !ok {
		t.Errorf("missing answer: asked %+v", reqs)
	}
}

func TestInputRequiredInvalidAnswers(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, irWorkflows(t))
	for name, c := range map[string]struct {
		tool   string
		answer any
		want   string
	}{
		"schema":         {"greet", accept(map[string]any{"name": 5}), `inputResponses["user_name"]: the content does not match`},
		"missing field":  {"greet", accept(map[string]any{}), `inputResponses["user_name"]: the content does not match`},
		"unknown action": {"greet", map[string]any{"action": "maybe"}, `unknown action "maybe"`},
		"not elicit":     {"greet", map[string]any{"roots": []any{}}, `inputResponses["user_name"]: is not an elicitation result`},
		"not a number":   {"greet", 12345, ``}, // refused by the go-sdk as it reads the params
		"sample no role": {"sampler", map[string]any{"role": "robot", "content": map[string]any{"type": "text", "text": "x"}, "model": "m"}, `has the role "robot"`},
	} {
		key := "user_name"
		if c.tool == "sampler" {
			reqs, _ := inputRequests(t, irCall(t, comp, c.tool, allCaps, nil))
			for k := range reqs {
				key = k
			}
		}
		r := irCall(t, comp, c.tool, allCaps, map[string]any{"inputResponses": map[string]any{key: c.answer}})
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, c.want) {
			t.Errorf("%s: %+v %+v, want -32602 %q", name, r.Error, r.Result, c.want)
		}
	}
}

func TestInputRequiredMultiRound(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, irWorkflows(t))
	reqs, s1 := inputRequests(t, irCall(t, comp, "two_rounds", allCaps, nil))
	if _, ok := reqs["name"]; !ok || len(reqs) != 1 {
		t.Fatalf("round 1: %+v", reqs)
	}
	reqs, s2 := inputRequests(t, irCall(t, comp, "two_rounds", allCaps, map[string]any{"requestState": s1,
		"inputResponses": map[string]any{"name": accept(map[string]any{"name": "Alice"})}}))
	if _, ok := reqs["color"]; !ok || len(reqs) != 1 || s2 == s1 {
		t.Fatalf("round 2: %+v", reqs)
	}
	// Round 3 brings only the new answer: the first comes from the state.
	r := irCall(t, comp, "two_rounds", allCaps, map[string]any{"requestState": s2,
		"inputResponses": map[string]any{"color": accept(map[string]any{"color": "blue"})}})
	if got := resultText(r); got != "Alice likes blue" {
		t.Fatalf("round 3: %q %+v", got, r.Error)
	}
}

func TestInputRequiredParallelQuestionsInOneResult(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, irWorkflows(t))
	reqs, state := inputRequests(t, irCall(t, comp, "all_three", allCaps, nil))
	methods := map[string]string{}
	for id, q := range reqs {
		methods[id] = q.(map[string]any)["method"].(string)
	}
	if methods["who"] != "elicitation/create" || methods["model"] != "sampling/createMessage" || methods["dirs"] != "roots/list" || len(methods) != 3 {
		t.Fatalf("asked %v", methods)
	}
	r := irCall(t, comp, "all_three", allCaps, map[string]any{"requestState": state, "inputResponses": map[string]any{
		"who":   accept(map[string]any{"name": "Alice"}),
		"model": map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "Hello"}, "model": "m"},
		"dirs":  map[string]any{"roots": []any{map[string]any{"uri": "file:///tmp", "name": "tmp"}}},
	}})
	if got := resultText(r); got != `[{"name":"Alice"},"Hello",[{"name":"tmp","uri":"file:///tmp"}]]` {
		t.Fatalf("answered: %q %+v", got, r.Error)
	}
}

func TestInputRequiredMissingCapability(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, irWorkflows(t))
	r := irCall(t, comp, "sampler", map[string]any{"elicitation": map[string]any{}}, nil)
	if r.Error == nil || r.Error.Code != -32021 {
		t.Fatalf("want -32021, got %+v %+v", r.Error, r.Result)
	}
	var data struct {
		RequiredCapabilities map[string]any `json:"requiredCapabilities"`
	}
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || data.RequiredCapabilities["sampling"] == nil || len(data.RequiredCapabilities) != 1 {
		t.Errorf("data %s", r.Error.Data)
	}
	if r.status != http.StatusBadRequest {
		t.Errorf("HTTP status %d, want 400", r.status)
	}
}

// An input request stops the run where it asked: no error handler (redelivery,
// dead letter), tolerant multicast or split, or on_decline swallows it, and the
// steps after the question do not run.
func TestInputRequiredNothingSwallowsTheQuestion(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	dead, after := 0, 0
	count := func(n *int) engine.Processor {
		return engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error {
			mu.Lock()
			*n++
			mu.Unlock()
			return nil
		})
	}
	comp := askServersWith(t, func(hc *engine.Context) []*engine.Workflow {
		guarded := askWorkflow(t, hc, "guarded", `
- elicit: {id: q, message: "Sure?", schema: {properties: {ok: {type: boolean}}}}
`)
		guarded.Processors = append(guarded.Processors, count(&after))
		guarded.ErrorHandler = engine.NewErrorHandler(hc, engine.ErrorHandlerOptions{MaximumRedeliveries: 3, DeadLetterURI: "direct://dead"})
		return []*engine.Workflow{
			guarded,
			{ID: "dead", FromURI: "direct://dead", Processors: []engine.Processor{count(&dead)}},
			askWorkflow(t, hc, "tolerant_multicast", `
- multicast:
    strategy: parallel
    steps:
      - elicit: {id: q, message: "Sure?"}
      - set-body: "fine"
- aggregate: {strategy: collect}
`),
			askWorkflow(t, hc, "tolerant_split", `
- set-body:
    starlang: '[1, 2]'
- split:
    stop_on_error: false
    parallel: true
    steps:
      - elicit: {id: q, message: "Element ${body}?"}
`),
			askWorkflow(t, hc, "declining", `
- elicit: {id: q, message: "Sure?", on_decline: continue}
- set-body: "went on"
`),
		}
	})
	for tool, want := range map[string][]string{
		"guarded":            {"q"},
		"tolerant_multicast": {"q"},
		"tolerant_split":     {"q", "q#2"},
		"declining":          {"q"},
	} {
		reqs, _ := inputRequests(t, irCall(t, comp, tool, allCaps, nil))
		if len(reqs) != len(want) {
			t.Errorf("%s asked %v, want %v", tool, reqs, want)
		}
		for _, id := range want {
			if _, ok := reqs[id]; !ok {
				t.Errorf("%s asked %v, want %v", tool, reqs, want)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if dead != 0 || after != 0 {
		t.Errorf("%d dead letters and %d runs of the step after the question, want none", dead, after)
	}
	// Answered (declined), the workflow goes on past the question.
	r := irCall(t, comp, "declining", allCaps, map[string]any{"inputResponses": map[string]any{"q": map[string]any{"action": "decline"}}})
	if got := resultText(r); got != "went on" {
		t.Errorf("declined with on_decline continue: %q %+v", got, r.Error)
	}
}

// The tools/call fast path answers plain calls of tools that never ask; a call
// carrying inputResponses or requestState goes the go-sdk way, where its state is
// checked (a bogus one refused) even for such a tool.
func TestInputRequiredLeavesTheFastPath(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, irWorkflows(t))
	if got := resultText(irCall(t, comp, "plain", allCaps, nil)); got != "plain" {
		t.Fatalf("plain: %q", got)
	}
	r := irCall(t, comp, "plain", allCaps, map[string]any{"requestState": "bogus"})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "requestState") {
		t.Errorf("plain with a bogus requestState: %+v %+v", r.Error, r.Result)
	}
	r = irCall(t, comp, "plain", allCaps, map[string]any{"inputResponses": map[string]any{"x": map[string]any{"action": "cancel"}}})
	if got := resultText(r); got != "plain" {
		t.Errorf("plain with unasked inputResponses: %q %+v", got, r.Error)
	}
}

// A session of protocol 2025-11-25 still gets server-to-client requests: the
// elicitation arrives while the call waits, on one tools/call.
func TestLegacySessionStillElicits(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, irWorkflows(t))
	for _, id := range []string{"helix", "sdk"} {
		asked := 0
		cs := askClientOn(t, comp, id, "2025-11-25", &sdk.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked++
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}})
		if v := cs.InitializeResult().ProtocolVersion; v > "2025-11-25" {
			t.Fatalf("%s: negotiated %s", id, v)
		}
		text, isErr := callText(t, cs, "greet", map[string]any{})
		if isErr || asked != 1 || text != "Hello, Ada! (None, state None)" {
			t.Errorf("%s: %q (error %v, asked %d)", id, text, isErr, asked)
		}
	}
}

// A retry resumes at the step that asked, with the exchange as it was before it
// (body, headers, variables): the steps before it do not run again. An exchange
// that cannot be kept (a body that is no plain data) replays from the first step.
func TestInputRequiredResumesWhereItStopped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	runs := map[string]int{}
	count := func(name string, body any) engine.Processor {
		return engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			mu.Lock()
			runs[name]++
			mu.Unlock()
			if body != nil {
				ex.In().SetBody(body)
			}
			return nil
		})
	}
	type opaque struct{ n int }
	comp := askServersWith(t, func(hc *engine.Context) []*engine.Workflow {
		steps := func(id string, first any) *engine.Workflow {
			ask1 := askWorkflow(t, hc, id, `
- set-header: {name: X-Order, constant: "o-1"}
- elicit: {id: name, message: "Name?", schema: {properties: {name: {type: string}}, required: [name]}, into: who}
`)
			ask2 := askWorkflow(t, hc, id+"_tail", `
- elicit: {id: color, message: "Color?", schema: {properties: {color: {type: string}}, required: [color]}}
- transform:
    starlang: |
      "%s likes %s (order %s, before %s)" % (variables["who"]["name"], payload["color"], header("X-Order"), variables["before"])
`)
			ps := []engine.Processor{count(id+":first", first), engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
				ex.SetVariable("before", []byte("kept"))
				return nil
			})}
			ps = append(ps, ask1.Processors...)
			ps = append(ps, count(id+":middle", nil))
			ps = append(ps, ask2.Processors...)
			return &engine.Workflow{ID: id, FromURI: "direct://" + id, Processors: ps}
		}
		return []*engine.Workflow{steps("resumable", map[string]any{"n": 1}), steps("replayed", opaque{n: 1})}
	})
	for _, c := range []struct {
		tool           string
		first, middle  int
		wantTextPrefix string
	}{
		{"resumable", 1, 1, `Alice likes blue (order o-1, before kept)`},
		{"replayed", 3, 2, `Alice likes blue (order o-1, before kept)`},
	} {
		_, s1 := inputRequests(t, irCall(t, comp, c.tool, allCaps, nil))
		_, s2 := inputRequests(t, irCall(t, comp, c.tool, allCaps, map[string]any{"requestState": s1,
			"inputResponses": map[string]any{"name": accept(map[string]any{"name": "Alice"})}}))
		r := irCall(t, comp, c.tool, allCaps, map[string]any{"requestState": s2,
			"inputResponses": map[string]any{"color": accept(map[string]any{"color": "blue"})}})
		if got := resultText(r); got != c.wantTextPrefix {
			t.Errorf("%s: %q %+v", c.tool, got, r.Error)
		}
		mu.Lock()
		if runs[c.tool+":first"] != c.first || runs[c.tool+":middle"] != c.middle {
			t.Errorf("%s: first step ran %d times, middle %d; want %d and %d", c.tool, runs[c.tool+":first"], runs[c.tool+":middle"], c.first, c.middle)
		}
		mu.Unlock()
	}
}

// A requestState belongs to the caller it was issued to: another API key's retry
// is refused.
func TestInputRequiredStateBelongsToItsCaller(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("keyed")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	for _, wf := range irWorkflows(t)(hc) {
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	stack, err := security.New(security.Config{APIKeys: []string{"key-a", "key-b"}, ServerID: "keyed"})
	if err != nil {
		t.Fatal(err)
	}
	comp := server.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(server.Options{ID: "keyed", Addr: "127.0.0.1:0", Stateless: true,
		HTTPMiddleware: stack.Middleware, DisableLocalhostProtection: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	a, b := map[string]string{"X-API-Key": "key-a"}, map[string]string{"X-API-Key": "key-b"}
	answer := map[string]any{"user_name": accept(map[string]any{"name": "Alice"})}

	_, state := inputRequests(t, irCallOn(t, comp, "keyed", a, "greet", allCaps, nil))
	r := irCallOn(t, comp, "keyed", b, "greet", allCaps, map[string]any{"requestState": state, "inputResponses": answer})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "issued to another caller") {
		t.Fatalf("another key's retry: %+v %+v", r.Error, r.Result)
	}
	_, state = inputRequests(t, irCallOn(t, comp, "keyed", a, "greet", allCaps, nil))
	r = irCallOn(t, comp, "keyed", a, "greet", allCaps, map[string]any{"requestState": state, "inputResponses": answer})
	if got := resultText(r); !strings.HasPrefix(got, "Hello, Alice!") {
		t.Fatalf("the same key's retry: %q %+v", got, r.Error)
	}
}

// resources/read of a resource whose workflow asks is answered the same way.
func TestInputRequiredResourceRead(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("res")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	for _, wf := range irWorkflows(t)(hc) {
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	res := &server.Resource{URI: "test://asked", Name: "asked", MIMEType: "text/plain",
		Read: func(ctx context.Context, _ string, _ map[string]string) (*server.ResourceContent, error) {
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{})
			if err := hc.Run(ctx, "greet", ex); err != nil {
				return nil, err
			}
			return &server.ResourceContent{Text: ex.In().Body().(string)}, nil
		}}
	comp := server.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(server.Options{ID: "res", Addr: "127.0.0.1:0", Stateless: true, Resources: []*server.Resource{res}}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	read := func(extra map[string]any) map[string]any {
		params := map[string]any{"uri": "test://asked", "_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": allCaps}}
		for k, v := range extra {
			params[k] = v
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": params})
		req, _ := http.NewRequest(http.MethodPost, "http://"+comp.Addr("res").String()+"/mcp", bytes.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": "test://asked"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		raw, _ := io.ReadAll(resp.Body)
		if i := bytes.Index(raw, []byte("data: ")); i >= 0 {
			raw = raw[i+6:]
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return out
	}
	r1, _ := read(nil)["result"].(map[string]any)
	state, _ := r1["requestState"].(string)
	if r1["resultType"] != "input_required" || state == "" {
		t.Fatalf("round 1: %+v", r1)
	}
	r2 := read(map[string]any{"requestState": state, "inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Res"})}})
	contents, _ := r2["result"].(map[string]any)["contents"].([]any)
	if len(contents) != 1 || !strings.HasPrefix(contents[0].(map[string]any)["text"].(string), "Hello, Res!") {
		t.Fatalf("round 2: %+v", r2)
	}
}

// A state that would be too large is not issued: the call answers with a tool
// error saying so.
func TestInputRequiredStateTooLarge(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, irWorkflows(t))
	_, s1 := inputRequests(t, irCall(t, comp, "two_rounds", allCaps, nil))
	big := strings.Repeat("x", 300<<10)
	r := irCall(t, comp, "two_rounds", allCaps, map[string]any{"requestState": s1,
		"inputResponses": map[string]any{"name": accept(map[string]any{"name": big})}})
	if r.Error != nil || r.Result["isError"] != true || !strings.Contains(resultText(r), "too large") {
		t.Fatalf("got %+v %.200v", r.Error, resultText(r))
	}
}

// A question asked in a workflow the tool reaches through direct:// (statically,
// through a chain, or through a target chosen per exchange) is the tool's
// question: the call leaves the fast path and is answered with input requests,
// not with "no client to ask".
func TestInputRequiredThroughDirectSubWorkflows(t *testing.T) {
	t.Parallel()
	comp := askServersWith(t, func(hc *engine.Context) []*engine.Workflow {
		return append(irWorkflows(t)(hc),
			askWorkflow(t, hc, "via_sub", `
- to: direct://greet
`),
			askWorkflow(t, hc, "via_chain", `
- to: direct://via_sub
`),
			askWorkflow(t, hc, "via_dynamic", `
- set-header: {name: Target, constant: greet}
- to: direct://${header.Target}
`),
			// A cycle that asks nothing: the walk ends, the tool stays plain.
			askWorkflow(t, hc, "loop_a", `
- choice:
    when:
      - starlang: 'header("Never") == "x"'
        steps: [{to: direct://loop_b}]
- set-body: {constant: looped}
`),
			askWorkflow(t, hc, "loop_b", `
- to: direct://loop_a
`))
	})
	for _, tool := range []string{"via_sub", "via_chain", "via_dynamic"} {
		reqs, state := inputRequests(t, irCall(t, comp, tool, allCaps, nil))
		if _, ok := reqs["user_name"]; !ok {
			t.Errorf("%s asked %+v", tool, reqs)
			continue
		}
		r := irCall(t, comp, tool, allCaps, map[string]any{"requestState": state,
			"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Ada"})}})
		if got := resultText(r); r.Error != nil || !strings.HasPrefix(got, "Hello, Ada!") {
			t.Errorf("%s round 2: %q %+v", tool, got, r.Error)
		}
	}
	if got := resultText(irCall(t, comp, "loop_a", allCaps, nil)); got != "looped" {
		t.Errorf("loop_a: %q", got)
	}
}
