package openai

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/arvenza/helix/internal/agent"
)

// sdkParams builds the SDK's params for a request as the provider did before it
// encoded the body itself: the reference of the differential tests.
func sdkParams(cfg Config, req *agent.ModelRequest, stream bool) (sdk.ChatCompletionNewParams, error) {
	tools, err := sdkTools(req.Tools)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	return sdkParamsWith(cfg, req, stream, tools)
}

// sdkTools converts tool definitions to the SDK's params (which the provider
// cached per tool set).
func sdkTools(defs []agent.ToolDef) ([]sdk.ChatCompletionToolUnionParam, error) {
	var tools []sdk.ChatCompletionToolUnionParam
	for _, d := range defs {
		var params shared.FunctionParameters
		if err := json.Unmarshal(d.InputSchema, &params); err != nil {
			return nil, fmt.Errorf("openai: tool %s: input schema: %w", d.Name, err)
		}
		tools = append(tools, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: d.Name, Description: sdk.String(d.Description), Parameters: params}))
	}
	return tools, nil
}

func sdkParamsWith(cfg Config, req *agent.ModelRequest, stream bool, tools []sdk.ChatCompletionToolUnionParam) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(cfg.Model), Tools: tools}
	if cfg.Temperature != nil {
		p.Temperature = sdk.Float(*cfg.Temperature)
	}
	if cfg.MaxTokens > 0 {
		p.MaxTokens = sdk.Int(int64(cfg.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		p.Messages = append(p.Messages, toParam(msg))
	}
	if len(p.Tools) > 0 {
		p.ParallelToolCalls = sdk.Bool(req.ParallelToolCalls)
	}
	if len(req.OutputSchema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return p, fmt.Errorf("openai: output schema: %w", err)
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: schema}}}
	}
	if stream {
		p.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	}
	return p, nil
}

func toParam(msg agent.Message) sdk.ChatCompletionMessageParamUnion {
	switch msg.Role {
	case agent.RoleTool:
		return sdk.ToolMessage(msg.Text, msg.ToolCallID)
	case agent.RoleAssistant:
		a := sdk.ChatCompletionAssistantMessageParam{}
		if msg.Text != "" {
			a.Content.OfString = sdk.String(msg.Text)
		}
		for _, tc := range msg.ToolCalls {
			args := string(tc.Arguments)
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args}}})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
	default:
		return sdk.UserMessage(msg.Text)
	}
}

// sdkBody is the SDK's encoding of the request as a JSON value; a streamed
// request also gets "stream": true, which NewStreaming sets on the encoded body.
func sdkBody(t *testing.T, cfg Config, req *agent.ModelRequest, stream bool) (any, error) {
	t.Helper()
	p, err := sdkParams(cfg, req, stream)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	v := jsonValue(t, raw)
	if stream {
		v.(map[string]any)["stream"] = true
	}
	return v, nil
}

func jsonValue(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return v
}

// texts are the strings requests are made of: empty, plain, escapes, control
// characters, HTML, JavaScript line separators, non-ASCII, surrogate pairs,
// invalid UTF-8 (the SDK writes it as U+FFFD), JSON inside a string.
var texts = []string{
	"", "hi", "what is 2+3?", `quote " and backslash \ and slash /`, "tab\tnewline\ncr\r",
	"\x00\x01\x1f\x7f", "<b>&amp;</b>", "line\u2028sep\u2029para", "héllo wörld — ünïcödé",
	"日本語のテキスト", "emoji 😀🎉 and 𝄞", "bad utf-8 \xff\xfe and \xc3", "\xed\xa0\x80 lone surrogate",
	`{"json":"inside","n":[1,2]}`, strings.Repeat("long ", 200),
}

var argTexts = []string{"", "{}", `{"a":1}`, `{"text":"hi \"there\"","n":[1.5,null,true]}`, `not json`, `{"u":"\u00e9\ud83d\ude00"}`, "{\"bad\":\"\xff\"}"}

var schemas = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"a":{"type":"string","description":"the \"a\" <value>"},"n":{"type":"integer","minimum":-1e3,"maximum":12345678901234567890}},"required":["a"]}`,
	`{"type":"object","properties":{"list":{"type":"array","items":{"type":"object","properties":{"x":{"enum":[1,2.5,"three",null,true]}}}}},"additionalProperties":false}`,
	`{"type":"object","properties":{"ü":{"type":"string","pattern":"^[a-z]+\\d$"}}}`,
	`{}`,
	`null`,
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// randomRequest makes a request as an agent could send it, and sometimes more.
func randomRequest(r *rand.Rand) (Config, *agent.ModelRequest, bool) {
	cfg := Config{Model: pick(r, []string{"gpt-4o-mini", "m", "llama3.1:8b", "model \"quoted\" ü"})}
	if r.IntN(2) == 0 {
		t := pick(r, []float64{0, 0.2, 1, 1.7, 2, 1e-7, 0.000001, 1e21, 123456789.125, -0.5})
		cfg.Temperature = &t
	}
	if r.IntN(2) == 0 {
		cfg.MaxTokens = pick(r, []int{1, 100, 4096, 1 << 30})
	}
	req := &agent.ModelRequest{ParallelToolCalls: r.IntN(2) == 0}
	if r.IntN(3) > 0 {
		req.System = pick(r, texts)
	}
	for range r.IntN(8) {
		switch r.IntN(3) {
		case 0:
			req.Messages = append(req.Messages, agent.Message{Role: agent.RoleUser, Text: pick(r, texts)})
		case 1:
			m := agent.Message{Role: agent.RoleAssistant}
			if r.IntN(2) == 0 {
				m.Text = pick(r, texts)
			}
			for i := range r.IntN(4) {
				m.ToolCalls = append(m.ToolCalls, agent.ToolCall{ID: fmt.Sprintf("call_%d%s", i, pick(r, texts[:4])),
					Name: pick(r, []string{"echo", "add", "ns.tool-x", "ü"}), Arguments: json.RawMessage(pick(r, argTexts))})
			}
			req.Messages = append(req.Messages, m)
		default:
			req.Messages = append(req.Messages, agent.Message{Role: agent.RoleTool, Text: pick(r, texts),
				ToolCallID: pick(r, []string{"call_1", "", "id \"q\""}), IsError: r.IntN(2) == 0})
		}
	}
	// A role the provider does not know is sent as the user's, as before.
	if r.IntN(10) == 0 {
		req.Messages = append(req.Messages, agent.Message{Role: "other", Text: pick(r, texts)})
	}
	for i := range r.IntN(4) {
		req.Tools = append(req.Tools, agent.ToolDef{Name: fmt.Sprintf("tool%d", i), Description: pick(r, texts[:10]),
			InputSchema: json.RawMessage(pick(r, schemas))})
	}
	if r.IntN(3) == 0 {
		req.OutputSchema = json.RawMessage(pick(r, schemas))
	}
	return cfg, req, r.IntN(4) == 0
}

// The body the provider writes is, for every request, the same JSON value as
// the SDK's encoding of the params the provider used to build.
func TestRequestBodyMatchesSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 800 {
		cfg, req, stream := randomRequest(r)
		m := &Model{cfg: cfg} // no client: only the body is made

		want, err := sdkBody(t, cfg, req, stream)
		if err != nil {
			t.Fatalf("request %d: SDK: %v", i, err)
		}
		// Twice: the second body uses the cached tools and schema.
		for range 2 {
			body, err := m.requestBody(req, stream)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if got := jsonValue(t, body); !reflect.DeepEqual(got, want) {
				w, _ := json.Marshal(want)
				t.Fatalf("request %d: body\n %s\nis not the SDK's\n %s", i, body, w)
			}
		}
	}
}

// A tool or output schema that is not a JSON object fails as it did with the
// SDK's params, naming it.
func TestRequestBodyBadSchemas(t *testing.T) {
	for _, bad := range []string{``, `{"type":`, `[]`, `"object"`, `1`, `{"a":1}x`} {
		cases := map[string]*agent.ModelRequest{
			"tool x: input schema": {Tools: []agent.ToolDef{{Name: "x", InputSchema: json.RawMessage(bad)}}},
		}
		if bad != "" {
			cases["output schema"] = &agent.ModelRequest{OutputSchema: json.RawMessage(bad)}
		}
		for want, req := range cases {
			m := &Model{cfg: Config{Model: "m"}}
			_, err := m.requestBody(req, false)
			_, sdkErr := sdkParams(m.cfg, req, false)
			if err == nil || sdkErr == nil || !strings.Contains(err.Error(), "openai: "+want) {
				t.Errorf("%s %q: err %v, SDK's %v", want, bad, err, sdkErr)
			}
		}
	}
}

// Once the tools and the schema are encoded, a request body is one allocation:
// the body itself.
func TestRequestBodyAllocations(t *testing.T) {
	m, _ := New(Config{Model: "gpt-4o-mini", MaxTokens: 100})
	req := benchRequest()
	if _, err := m.requestBody(req, false); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = m.requestBody(req, false) }); n != 1 {
		t.Fatalf("%v allocations per body, want 1", n)
	}
}

func TestNewRejectsTemperatureJSONCannotCarry(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := New(Config{Model: "m", Temperature: &v}); err == nil || !strings.Contains(err.Error(), "temperature") {
			t.Errorf("temperature %v: err %v", v, err)
		}
	}
}

// benchRequest is the fourth request of an agent run that calls one tool per
// turn (the shape of BenchmarkAgentOverheadOpenAIMCP's requests).
func benchRequest() *agent.ModelRequest {
	req := &agent.ModelRequest{System: "You are a helpful assistant. Use the tools when they help.",
		Tools: []agent.ToolDef{{Name: "echo", Description: "Echoes its text back.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}},
		Messages: []agent.Message{{Role: agent.RoleUser, Text: "Say hi through the echo tool, four times."}}}
	for i := range 3 {
		id := fmt.Sprintf("call_%d", i+1)
		req.Messages = append(req.Messages,
			agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: id, Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}}},
			agent.Message{Role: agent.RoleTool, ToolCallID: id, Text: "hi"})
	}
	return req
}

// BenchmarkRequestBody compares the provider's encoding of a request with the
// SDK's (building the params and encoding them), as Generate did before.
func BenchmarkRequestBody(b *testing.B) {
	req := benchRequest()
	m, _ := New(Config{Model: "gpt-4o-mini"})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.requestBody(req, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The tool params converted once, as the provider cached them; the messages
	// converted and everything encoded per request, as the SDK's request did.
	tools, err := sdkTools(req.Tools)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := sdkParamsWith(m.cfg, req, false, tools)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
