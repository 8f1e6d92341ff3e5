// Package openai is the agent model provider for OpenAI's Chat Completions API
// with tool calls, on the official SDK. BaseURL points it at any OpenAI-compatible
// server (Ollama, vLLM, LiteLLM, SynaptX …).
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

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
	// HTTPClient sends the requests; nil: the SDK's default, a client on the
	// default transport that waits at most 10 minutes for a response's headers.
	HTTPClient *http.Client
}

// Model is an [agent.Model] on Chat Completions. Safe for concurrent use.
type Model struct {
	cfg  Config
	send *sender
	// tools is the last tool set encoded, schema the last output schema (see
	// encode.go).
	tools  atomic.Pointer[convertedTools]
	schema atomic.Pointer[encodedSchema]
}

// chatPath is the Chat Completions endpoint under the base URL.
const chatPath = "chat/completions"

var _ agent.Model = (*Model)(nil)

// New builds a provider; it sends nothing.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: model is required")
	}
	if t := cfg.Temperature; t != nil && (math.IsNaN(*t) || math.IsInf(*t, 0)) {
		return nil, fmt.Errorf("openai: temperature %v is not a number", *t)
	}
	if cfg.BaseURL != "" {
		// The SDK's error would quote the URL, which may hold credentials.
		if _, err := url.Parse(cfg.BaseURL); err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("openai: base URL: %w", err)
		}
	}
	client := sdk.NewClient(clientOptions(cfg)...)
	send, err := newSender(&client, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, send: send}, nil
}

// clientOptions configure the SDK client whose request the provider's requests
// copy (see sender). The generic Post that prepares it would fall back to an
// admin key from the environment (OPENAI_ADMIN_KEY) when there is no API key;
// the Chat Completions methods never send one, so the admin key is cleared.
func clientOptions(cfg Config) []option.RequestOption {
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithAdminAPIKey(""), option.WithMaxRetries(0),
		option.WithMiddleware(agent.TraceHeaders)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return opts
}

// Generate sends one Chat Completions request; with req.OnText set, a streamed one
// (see stream.go).
func (m *Model) Generate(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
	return agent.TraceGenerate(ctx, "openai", m.cfg.Model, func(ctx context.Context) (*agent.ModelResponse, error) { return m.generate(ctx, req) })
}

// generate is Generate without its span. The body is encoded by the provider
// (encode.go), sent as the SDK sends it (send.go) and the answer decoded by the
// provider (decode.go).
func (m *Model) generate(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
	body, err := m.requestBody(req, req.OnText != nil)
	if err != nil {
		return nil, err
	}
	if req.OnText != nil {
		return m.stream(ctx, body, req.OnText)
	}
	res, err := m.send.post(ctx, body, m.cfg.APIKey)
	if err != nil {
		return nil, m.wrap(ctx, err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !isJSON(ct) {
		return nil, agent.NewProviderError("openai", m.cfg.APIKey, 0, fmt.Sprintf("response is not JSON (content type %q)", ct), nil)
	}
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, m.wrap(ctx, fmt.Errorf("reading the response: %w", err))
	}
	return decodeCompletion(raw)
}

// isJSON reports whether a response's content type is JSON, as the SDK decides
// it (application/json or any +json type).
func isJSON(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	mediaType = strings.ToLower(strings.TrimSpace(mediaType))
	return strings.Contains(mediaType, "application/json") || strings.HasSuffix(mediaType, "+json")
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

// wrap turns an SDK error into an *agent.ProviderError with the provider's message
// and no API key.
func (m *Model) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var pe *agent.ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		return agent.NewProviderError("openai", m.cfg.APIKey, ae.StatusCode, ae.Message, ae.Response)
	}
	return agent.NewProviderError("openai", m.cfg.APIKey, 0, err.Error(), nil)
}
