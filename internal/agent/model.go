package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Model is a chat model that can call tools: one request, one assistant turn. The
// providers (internal/agent/openai, internal/agent/anthropic) implement it on the vendors'
// official SDKs. Generate is called by one run at a time per request but by many
// runs concurrently, so implementations must be safe for concurrent use. It must
// return promptly when ctx ends. A provider's HTTP failure is a *[ProviderError];
// the agent retries those that are [ProviderError.Retryable] itself, so providers
// must not retry on their own.
type Model interface {
	Generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error)
}

// Role is who wrote a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool is the result of one tool call, answering ToolCallID.
	RoleTool Role = "tool"
)

// Message is one entry of a conversation. A user message has Text; an assistant
// message has Text, ToolCalls or both; a tool message answers one tool call
// (ToolCallID) with Text, IsError when the call failed.
type Message struct {
	Role       Role
	Text       string
	ToolCalls  []ToolCall
	ToolCallID string
	IsError    bool
}

// ToolCall is a model's request to call a tool; Arguments is the JSON the model
// wrote, possibly invalid.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolDef is a tool as the model is shown it.
type ToolDef struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema object schema.
	InputSchema json.RawMessage
}

// ModelRequest is what the agent asks of a model in one iteration. The model must
// not modify or keep it.
type ModelRequest struct {
	System   string
	Messages []Message
	Tools    []ToolDef
	// ParallelToolCalls allows several tool calls in one turn.
	ParallelToolCalls bool
	// OutputSchema, when set, is the JSON Schema the final answer must match; a
	// provider that supports structured output passes it on, the agent validates
	// either way.
	OutputSchema json.RawMessage
	// OnText, when set, asks for the turn as it is written: the provider uses its
	// streaming API and calls OnText with every text delta, in order, on the
	// goroutine that called Generate, before Generate returns. The response is the
	// same as without it. Deltas already given stay given when the stream then
	// fails (the error is a *ProviderError like any other).
	OnText func(delta string)
}

// ModelResponse is a model's turn: an assistant message and the tokens it cost.
type ModelResponse struct {
	Message Message
	Usage   Usage
	// StopReason is why the model stopped, as the provider says it
	// ("tool_calls", "end_turn", "length" …); "" when it did not say.
	StopReason string
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
}

// ProviderError is a failed request to a model provider: its HTTP status and the
// provider's own message, never the API key.
type ProviderError struct {
	Provider   string // "openai", "anthropic"
	StatusCode int    // 0 when no response came (connection refused, bad response body)
	Message    string
	// RetryAfter is what the provider asked to wait (Retry-After); 0 when it did not say.
	RetryAfter time.Duration
}

func (e *ProviderError) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("%s: %s", e.Provider, e.Message)
	}
	return fmt.Sprintf("%s: status %d: %s", e.Provider, e.StatusCode, e.Message)
}

// Retryable reports whether the request may succeed if sent again: 429 and 5xx.
func (e *ProviderError) Retryable() bool {
	return e.StatusCode == 429 || e.StatusCode >= 500
}

// Redact replaces every occurrence of secret in s; providers pass every message
// they put in an error through it so an API key echoed by a server or a proxy
// never reaches an error or a log.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// ParseRetryAfter reads the wait a provider asked for: retry-after-ms (OpenAI),
// then Retry-After in seconds or as an HTTP date. 0 when absent or unreadable.
func ParseRetryAfter(get func(string) string, now time.Time) time.Duration {
	if ms := get("Retry-After-Ms"); ms != "" {
		var v float64
		if _, err := fmt.Sscanf(ms, "%g", &v); err == nil && v > 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	ra := get("Retry-After")
	if ra == "" {
		return 0
	}
	var secs float64
	if _, err := fmt.Sscanf(ra, "%g", &secs); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := time.Parse(time.RFC1123, ra); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
