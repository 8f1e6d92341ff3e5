// Package openai is the agent model provider for OpenAI's Chat Completions API
// with tool calls, on the official SDK. BaseURL points it at any OpenAI-compatible
// server (Ollama, vLLM, LiteLLM, SynaptX …).
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/arvenza/helix/internal/agent"
)

// Config configures a provider.
type Config struct {
	// Model is the model name, e.g. "gpt-4o-mini"; required.
	Model  string
	APIKey string
	// BaseURL is the API's base URL, ending in /v1 for most servers; empty: OpenAI's.
	BaseURL     string
	Temperature *float64
	// MaxTokens bounds each completion; 0: the server's default.
	MaxTokens int
	// HTTPClient sends the requests; nil: http.DefaultClient.
	HTTPClient *http.Client
}

// Model is an [agent.Model] on Chat Completions. Safe for concurrent use.
type Model struct {
	cfg    Config
	client sdk.Client
	// tools is the last tool set converted: an agent shows the model the same
	// tools every iteration, and decoding each schema again each time would cost
	// more than the rest of building the request.
	tools atomic.Pointer[convertedTools]
}

// convertedTools is a tool set and its request form. defs is a copy (schemas
// included) that is compared with the next request's tools, so a caller that
// changes its definitions in place still gets them converted anew.
type convertedTools struct {
	defs   []agent.ToolDef
	params []sdk.ChatCompletionToolUnionParam
}

// toolParams converts tool definitions to request tools, reusing the last
// conversion when defs are the same. The result is shared between requests and
// only read (encoded) by the SDK.
func (m *Model) toolParams(defs []agent.ToolDef) ([]sdk.ChatCompletionToolUnionParam, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	if c := m.tools.Load(); c != nil && sameTools(c.defs, defs) {
		return c.params, nil
	}
	c := &convertedTools{defs: make([]agent.ToolDef, len(defs)), params: make([]sdk.ChatCompletionToolUnionParam, 0, len(defs))}
	for i, d := range defs {
		var params shared.FunctionParameters
		if err := json.Unmarshal(d.InputSchema, &params); err != nil {
			return nil, fmt.Errorf("openai: tool %s: input schema: %w", d.Name, err)
		}
		c.params = append(c.params, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: d.Name, Description: sdk.String(d.Description), Parameters: params}))
		c.defs[i] = agent.ToolDef{Name: d.Name, Description: d.Description, InputSchema: bytes.Clone(d.InputSchema)}
	}
	m.tools.Store(c)
	return c.params, nil
}

func sameTools(a, b []agent.ToolDef) bool {
	return slices.EqualFunc(a, b, func(x, y agent.ToolDef) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.InputSchema, y.InputSchema)
	})
}

var _ agent.Model = (*Model)(nil)

// New builds a provider; it sends nothing.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: model is required")
	}
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(0),
		option.WithMiddleware(agent.TraceHeaders)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{cfg: cfg, client: sdk.NewClient(opts...)}, nil
}

// Generate sends one Chat Completions request; with req.OnText set, a streamed one
// (see stream.go).
func (m *Model) Generate(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
	return agent.TraceGenerate(ctx, "openai", m.cfg.Model, func(ctx context.Context) (*agent.ModelResponse, error) { return m.generate(ctx, req) })
}

// generate is Generate without its span.
func (m *Model) generate(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(m.cfg.Model)}
	if m.cfg.Temperature != nil {
		p.Temperature = sdk.Float(*m.cfg.Temperature)
	}
	if m.cfg.MaxTokens > 0 {
		p.MaxTokens = sdk.Int(int64(m.cfg.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		p.Messages = append(p.Messages, toParam(msg))
	}
	tools, err := m.toolParams(req.Tools)
	if err != nil {
		return nil, err
	}
	p.Tools = tools
	if len(p.Tools) > 0 {
		p.ParallelToolCalls = sdk.Bool(req.ParallelToolCalls)
	}
	if len(req.OutputSchema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return nil, fmt.Errorf("openai: output schema: %w", err)
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: schema}}}
	}
	if req.OnText != nil {
		return m.stream(ctx, p, req.OnText)
	}
	resp, err := m.client.Chat.Completions.New(ctx, p)
	if err != nil {
		return nil, m.wrap(ctx, err)
	}
	return response(resp)
}

// response reads a completion, received whole or accumulated from a stream.
func response(resp *sdk.ChatCompletion) (*agent.ModelResponse, error) {
	if len(resp.Choices) == 0 {
		return nil, &agent.ProviderError{Provider: "openai", Message: "response has no choices"}
	}
	c := resp.Choices[0].Message
	out := &agent.ModelResponse{
		Message:    agent.Message{Role: agent.RoleAssistant, Text: c.Content},
		Usage:      agent.Usage{InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens},
		StopReason: string(resp.Choices[0].FinishReason),
	}
	if out.Message.Text == "" && c.Refusal != "" {
		out.Message.Text = c.Refusal
	}
	for _, tc := range c.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, agent.ToolCall{
			ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	return out, nil
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

// wrap turns an SDK error into an *agent.ProviderError with the provider's message
// and no API key.
func (m *Model) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		return agent.NewProviderError("openai", m.cfg.APIKey, ae.StatusCode, ae.Message, ae.Response)
	}
	return agent.NewProviderError("openai", m.cfg.APIKey, 0, err.Error(), nil)
}
