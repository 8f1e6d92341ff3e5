// Package agenttest helps test agents offline: fake model servers that speak the
// providers' real wire formats (OpenAI Chat Completions, Anthropic Messages),
// plain JSON or, when the request asks to stream, server-sent events; scripted
// reply by reply ([NewOpenAI], [NewAnthropic]) or answered by a function of the
// request ([NewOpenAIFunc], [NewAnthropicFunc]) for end-to-end tests; and an
// in-process [ModelFunc].
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/agent"
)

// Call is a tool call a scripted reply makes; Args is the JSON arguments as the
// model writes them (may be invalid JSON on purpose).
type Call struct {
	ID, Name, Args string
}

// Reply is one scripted response. With Status 0 or 200 the server answers a
// successful turn (Text, Calls, token counts) in the provider's format; any other
// Status answers the provider's error body with Error as its message (before any
// stream starts, as the providers do). Body, when set, is sent verbatim instead
// (malformed JSON). Block makes the server wait until the client gives up
// (cancellation tests).
//
// When the request has "stream": true, a successful turn is sent as the
// provider's event stream with Text and each call's Args split into small
// deltas. The Stream* fields make that stream go wrong halfway through the text
// (without text: after the first event): StreamError sends the
// provider's error event with that message, StreamMalformed a chunk that is not
// JSON, StreamCut closes the connection, StreamStall waits until the client gives
// up. Without "stream": true they are ignored.
type Reply struct {
	Status       int
	Header       map[string]string
	Error        string
	Body         string
	Text         string
	Calls        []Call
	InputTokens  int
	OutputTokens int
	Block        bool

	StreamError     string
	StreamMalformed bool
	StreamCut       bool
	StreamStall     bool
}

// Server is a fake provider. A scripted server gives each request the next reply;
// a request beyond the script fails the test. A server with a reply function
// answers each request with what the function returns. Safe for concurrent use.
type Server struct {
	*httptest.Server
	t        testing.TB
	provider string
	mu       sync.Mutex
	replies  []Reply
	requests []map[string]any
	headers  []http.Header
	// answer, when set, replies instead of the script; calls are serialized by
	// answerMu so that it may keep state without locking.
	answer   func(Request) Reply
	answerMu sync.Mutex
}

// Request is what a reply function ([NewOpenAIFunc], [NewAnthropicFunc]) is given:
// a request as the server received it, with the parts a test usually answers on
// already read out of the provider's format.
type Request struct {
	// N counts the server's requests from 1.
	N int
	// Body is the decoded JSON body.
	Body map[string]any
	// Stream is whether the client asked for an event stream.
	Stream bool
	// Tools are the names of the tools offered, in order.
	Tools []string
	// System is the system prompt, "" when none.
	System string
	// UserMessage is the text of the last user message that has text (not the
	// tool results, which Anthropic sends as user messages too).
	UserMessage string
	// ToolResults are the latest tool results: those after the conversation's last
	// assistant message, in order; empty when the last turn was not a tool call.
	ToolResults []ToolResult
}

// ToolResult is a tool's answer as a request carries it.
type ToolResult struct {
	CallID  string
	Text    string
	IsError bool // Anthropic's is_error; OpenAI has no such flag
}

// NewOpenAI starts a fake Chat Completions server; use BaseURL as the provider's
// base URL. It is closed when the test ends.
func NewOpenAI(t testing.TB, replies ...Reply) *Server { return newServer(t, "openai", replies, nil) }

// NewAnthropic starts a fake Messages server; use BaseURL as the provider's base
// URL. It is closed when the test ends.
func NewAnthropic(t testing.TB, replies ...Reply) *Server {
	return newServer(t, "anthropic", replies, nil)
}

// NewOpenAIFunc starts a fake Chat Completions server that answers every request
// with answer(request), e.g. a tool call while req.ToolResults is empty, then a
// final answer quoting them. Several agents may use it at once: calls to answer
// are serialized, so answer may keep state without locking. It runs on the
// server's goroutines: it should not block, and should report with t.Error, not
// t.Fatal. Closed when the test ends.
func NewOpenAIFunc(t testing.TB, answer func(Request) Reply) *Server {
	return newServer(t, "openai", nil, answer)
}

// NewAnthropicFunc is [NewOpenAIFunc] for a fake Messages server.
func NewAnthropicFunc(t testing.TB, answer func(Request) Reply) *Server {
	return newServer(t, "anthropic", nil, answer)
}

func newServer(t testing.TB, provider string, replies []Reply, answer func(Request) Reply) *Server {
	s := &Server{t: t, provider: provider, replies: replies, answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is what to configure as the provider's base URL.
func (s *Server) BaseURL() string {
	if s.provider == "openai" {
		return s.URL + "/v1"
	}
	return s.URL
}

// Requests returns the JSON bodies received so far, decoded.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

// Headers returns the headers of the requests received so far.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	want := "/v1/chat/completions"
	if s.provider == "anthropic" {
		want = "/v1/messages"
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		s.t.Errorf("agenttest: %s %s, want POST %s", r.Method, r.URL.Path, want)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		s.t.Errorf("agenttest: request body is not JSON: %v", err)
	}
	s.mu.Lock()
	s.requests = append(s.requests, body)
	s.headers = append(s.headers, r.Header.Clone())
	n := len(s.requests)
	var rep Reply
	switch {
	case s.answer != nil:
		s.mu.Unlock()
		s.answerMu.Lock()
		rep = s.answer(s.request(n, body))
		s.answerMu.Unlock()
	case len(s.replies) == 0:
		s.mu.Unlock()
		s.t.Errorf("agenttest: request %d has no scripted reply", n)
		http.Error(w, "no scripted reply", http.StatusTeapot)
		return
	default:
		rep = s.replies[0]
		s.replies = s.replies[1:]
		s.mu.Unlock()
	}

	if rep.Block {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	if stream, _ := body["stream"].(bool); stream && status == http.StatusOK && rep.Body == "" {
		s.stream(w, r, body, rep)
		return
	}
	out := rep.Body
	if out == "" {
		if status == http.StatusOK {
			out = s.success(rep)
		} else {
			out = s.failure(status, rep.Error)
		}
	}
	w.WriteHeader(status)
	io.WriteString(w, out)
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func (s *Server) success(rep Reply) string {
	if s.provider == "anthropic" {
		content := []any{}
		if rep.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": rep.Text})
		}
		for _, c := range rep.Calls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Args)})
		}
		stop := "end_turn"
		if len(rep.Calls) > 0 {
			stop = "tool_use"
		}
		return mustJSON(map[string]any{"id": "msg_test", "type": "message", "role": "assistant", "model": "test",
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": rep.InputTokens, "output_tokens": rep.OutputTokens}})
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if rep.Text != "" {
		msg["content"] = rep.Text
	}
	finish := "stop"
	if len(rep.Calls) > 0 {
		var calls []any
		for _, c := range rep.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	return mustJSON(map[string]any{"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "test",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": rep.InputTokens, "completion_tokens": rep.OutputTokens, "total_tokens": rep.InputTokens + rep.OutputTokens}})
}

func (s *Server) failure(status int, message string) string {
	if s.provider == "anthropic" {
		typ := "api_error"
		switch {
		case status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case status < 500:
			typ = "invalid_request_error"
		}
		return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
	}
	return mustJSON(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": nil}})
}

// ModelFunc is an in-process agent.Model.
type ModelFunc func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error)

// Generate calls f.
func (f ModelFunc) Generate(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
	return f(ctx, req)
}

// Script is an in-process model answering with the given responses in order; a
// call beyond them returns an error.
func Script(responses ...*agent.ModelResponse) agent.Model {
	var mu sync.Mutex
	return ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(responses) == 0 {
			return nil, fmt.Errorf("agenttest: no scripted response")
		}
		r := responses[0]
		responses = responses[1:]
		return r, nil
	})
}

// LastToolResults returns the text of all the tool results a request carried, as
// the provider's wire format puts them (OpenAI: role "tool" messages; Anthropic:
// tool_result blocks), in order. [LatestToolResults] returns only the last turn's.
func LastToolResults(body map[string]any) []string {
	var out []string
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "tool" {
			out = append(out, fmt.Sprint(mm["content"]))
			continue
		}
		blocks, _ := mm["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] == "tool_result" {
				out = append(out, contentText(bm["content"]))
			}
		}
	}
	return out
}

func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				parts = append(parts, fmt.Sprint(pm["text"]))
			}
		}
		return strings.Join(parts, "")
	}
	return fmt.Sprint(v)
}
