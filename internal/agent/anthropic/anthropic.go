// Package anthropic is the agent model provider for Anthropic's Messages API with
// tool use, on the official SDK.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/arvenza/helix/internal/agent"
)

// DefaultMaxTokens is the max_tokens sent when Config.MaxTokens is 0; the Messages
// API requires one.
const DefaultMaxTokens = 4096

// Config configures a provider.
type Config struct {
	// Model is the model name; required.
	Model  string
	APIKey string
	// BaseURL is the API's base URL; empty: Anthropic's.
	BaseURL     string
	Temperature *float64
	// MaxTokens bounds each message; 0: DefaultMaxTokens.
	MaxTokens int
	// HTTPClient sends the requests; nil: http.DefaultClient.
	HTTPClient *http.Client
}

// Model is an [agent.Model] on the Messages API. Safe for concurrent use.
type Model struct {
	cfg    Config
	client sdk.Client
}

var _ agent.Model = (*Model)(nil)

// New builds a provider; it sends nothing.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: model is required")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(0),
		option.WithMiddleware(agent.TraceHeaders)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	if cfg.Temperature != nil {
		// This SDK version's MessageNewParams has no temperature field; the API still takes it.
		opts = append(opts, option.WithJSONSet("temperature", *cfg.Temperature))
	}
	return &Model{cfg: cfg, client: sdk.NewClient(opts...)}, nil
}

// Generate sends one Messages request; with req.OnText set, a streamed one (see
// stream.go). Consecutive tool results go back in one user message, as the API
// wants.
func (m *Model) Generate(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
	return agent.TraceGenerate(ctx, "anthropic", m.cfg.Model, func(ctx context.Context) (*agent.ModelResponse, error) { return m.generate(ctx, req) })
}

// generate is Generate without its span.
func (m *Model) generate(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(m.cfg.Model), MaxTokens: int64(m.cfg.MaxTokens)}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case agent.RoleTool:
			block := sdk.NewToolResultBlock(msg.ToolCallID, msg.Text, msg.IsError)
			if n := len(p.Messages); n > 0 && isToolResults(p.Messages[n-1]) {
				u := p.Messages[n-1].OfUser
				u.Content = append(u.Content, block)
			} else {
				p.Messages = append(p.Messages, sdk.NewUserMessage(block))
			}
		case agent.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if msg.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Text))
			}
			for _, tc := range msg.ToolCalls {
				var input any = map[string]any{}
				if len(tc.Arguments) > 0 && json.Valid(tc.Arguments) {
					input = tc.Arguments
				}
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, input, tc.Name))
			}
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		default:
			p.Messages = append(p.Messages, sdk.NewUserMessage(sdk.NewTextBlock(msg.Text)))
		}
	}
	for _, d := range req.Tools {
		var schema sdk.ToolInputSchemaParam
		if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
			return nil, fmt.Errorf("anthropic: tool %s: input schema: %w", d.Name, err)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &sdk.ToolParam{Name: d.Name, Description: sdk.String(d.Description), InputSchema: schema}})
	}
	if len(p.Tools) > 0 && !req.ParallelToolCalls {
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: sdk.Bool(true)}}
	}
	if len(req.OutputSchema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(req.OutputSchema, &schema); err != nil {
			return nil, fmt.Errorf("anthropic: output schema: %w", err)
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	if req.OnText != nil {
		return m.stream(ctx, p, req.OnText)
	}
	resp, err := m.client.Messages.New(ctx, p)
	if err != nil {
		return nil, m.wrap(ctx, err)
	}
	return response(resp, nil), nil
}

// response reads a message, received whole or accumulated from a stream. inputs,
// when not nil, holds a streamed tool call's arguments by content index as they
// were written: the accumulator replaces invalid JSON with {}, and the model
// should see its invalid arguments reported, as without streaming.
func response(resp *sdk.Message, inputs map[int][]byte) *agent.ModelResponse {
	out := &agent.ModelResponse{
		Message:    agent.Message{Role: agent.RoleAssistant},
		Usage:      agent.Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens},
		StopReason: string(resp.StopReason),
	}
	for i, b := range resp.Content {
		switch b.Type {
		case "text":
			out.Message.Text += b.Text
		case "tool_use":
			args := b.Input
			if raw := inputs[i]; len(raw) > 0 {
				args = raw
			}
			out.Message.ToolCalls = append(out.Message.ToolCalls, agent.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	return out
}

func isToolResults(m sdk.MessageParam) bool {
	if m.OfUser == nil || len(m.OfUser.Content) == 0 {
		return false
	}
	for _, b := range m.OfUser.Content {
		if b.OfToolResult == nil {
			return false
		}
	}
	return true
}

// wrap turns an SDK error into an *agent.ProviderError with the provider's message
// and no API key.
func (m *Model) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		return agent.NewProviderError("anthropic", m.cfg.APIKey, ae.StatusCode, providerMessage(ae.RawJSON()), ae.Response)
	}
	return agent.NewProviderError("anthropic", m.cfg.APIKey, 0, err.Error(), nil)
}

// providerMessage reads error.message of Anthropic's error body
// {"type":"error","error":{"type":…,"message":…}}.
func providerMessage(raw string) string {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) != nil {
		return ""
	}
	if body.Error.Type != "" && body.Error.Message != "" {
		return body.Error.Type + ": " + body.Error.Message
	}
	return body.Error.Message
}
