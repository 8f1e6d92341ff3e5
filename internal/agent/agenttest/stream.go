package agenttest

import (
	"fmt"
	"net/http"
	"strings"
)

// deltaRunes is the size of the text and argument fragments a streamed reply is
// cut into: small, so that even a short answer takes several deltas.
const deltaRunes = 4

// split cuts s into fragments of at most n runes (never inside a UTF-8 sequence).
func split(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// sse writes server-sent events and flushes each one, so the client sees the
// stream as it is written.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func (e sse) send(event, data string) {
	if event != "" {
		fmt.Fprintf(e.w, "event: %s\n", event)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", data)
	if e.f != nil {
		e.f.Flush()
	}
}

// streamFault is what goes wrong in a stream, sent once in place of the event the
// stream would have sent next.
type streamFault struct {
	rep      Reply
	r        *http.Request
	e        sse
	provider string
	done     bool
}

// inject sends the reply's fault, if any and not yet sent; it returns false when
// the stream must stop.
func (f *streamFault) inject() bool {
	if f.done {
		return true
	}
	f.done = true
	switch {
	case f.rep.StreamError != "":
		if f.provider == "anthropic" {
			f.e.send("error", mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": f.rep.StreamError}}))
		} else {
			f.e.send("", mustJSON(map[string]any{"error": map[string]any{"message": f.rep.StreamError, "type": "server_error", "param": nil, "code": nil}}))
		}
		return false
	case f.rep.StreamMalformed:
		event := ""
		if f.provider == "anthropic" {
			event = "content_block_delta"
		}
		f.e.send(event, `{"type":"content_block_delta","choices":[{"index":0,"delta":{"content":"x`)
		return false
	case f.rep.StreamCut:
		// Aborts the connection mid-body: the client reads an unexpected EOF.
		panic(http.ErrAbortHandler)
	case f.rep.StreamStall:
		<-f.r.Context().Done()
		return false
	}
	return true
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, body map[string]any, rep Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	e := sse{w: w, f: f}
	fault := &streamFault{rep: rep, r: r, e: e, provider: s.provider}
	if s.provider == "anthropic" {
		streamAnthropic(e, rep, fault)
	} else {
		opts, _ := body["stream_options"].(map[string]any)
		usage, _ := opts["include_usage"].(bool)
		streamOpenAI(e, rep, fault, usage)
	}
}

// streamOpenAI writes a Chat Completions stream: a role chunk, content deltas,
// each tool call's id and name then its argument fragments, the finish reason,
// the usage chunk when asked for (stream_options.include_usage), and [DONE].
func streamOpenAI(e sse, rep Reply, fault *streamFault, withUsage bool) {
	chunk := func(delta map[string]any, finish any) string {
		return mustJSON(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}})
	}
	e.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	parts := split(rep.Text, deltaRunes)
	for i, p := range parts {
		if i == len(parts)/2 && !fault.inject() {
			return
		}
		e.send("", chunk(map[string]any{"content": p}, nil))
	}
	if !fault.inject() {
		return
	}
	for i, c := range rep.Calls {
		e.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, p := range split(c.Args, deltaRunes) {
			e.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
		}
	}
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	e.send("", chunk(map[string]any{}, finish))
	if withUsage {
		e.send("", mustJSON(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": rep.InputTokens, "completion_tokens": rep.OutputTokens, "total_tokens": rep.InputTokens + rep.OutputTokens}}))
	}
	e.send("", "[DONE]")
}

// streamAnthropic writes a Messages stream: message_start, one content block per
// text and tool call (start, deltas, stop), a ping, message_delta with the stop
// reason and output tokens, and message_stop.
func streamAnthropic(e sse, rep Reply, fault *streamFault) {
	e.send("message_start", mustJSON(map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_test", "type": "message", "role": "assistant", "model": "test", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": rep.InputTokens, "output_tokens": 1}}}))
	index := 0
	if rep.Text != "" {
		e.send("content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}}))
		e.send("ping", `{"type": "ping"}`)
		parts := split(rep.Text, deltaRunes)
		for i, p := range parts {
			if i == len(parts)/2 && !fault.inject() {
				return
			}
			e.send("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}}))
		}
		e.send("content_block_stop", mustJSON(map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	if !fault.inject() {
		return
	}
	for _, c := range rep.Calls {
		e.send("content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}}))
		for _, p := range split(c.Args, deltaRunes) {
			e.send("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}))
		}
		e.send("content_block_stop", mustJSON(map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	stop := "end_turn"
	if len(rep.Calls) > 0 {
		stop = "tool_use"
	}
	e.send("message_delta", mustJSON(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rep.OutputTokens}}))
	e.send("message_stop", `{"type":"message_stop"}`)
}

// request reads what a reply function is given out of a body in the server's
// provider format.
func (s *Server) request(n int, body map[string]any) Request {
	req := Request{N: n, Body: body, ToolResults: LatestToolResults(body)}
	req.Stream, _ = body["stream"].(bool)
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		if fn, ok := tm["function"].(map[string]any); ok {
			tm = fn
		}
		if name, ok := tm["name"].(string); ok {
			req.Tools = append(req.Tools, name)
		}
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		switch mm["role"] {
		case "system":
			req.System = contentText(mm["content"])
		case "user":
			if text := userText(mm["content"]); text != "" {
				req.UserMessage = text
			}
		}
	}
	if sys, ok := body["system"]; ok && sys != nil {
		req.System = contentText(sys)
	}
	return req
}

// userText is the text of a user message's content: a string, or the text parts
// of a list (tool_result blocks are not text).
func userText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	parts, _ := v.([]any)
	var texts []string
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		if pm["type"] == "text" {
			texts = append(texts, fmt.Sprint(pm["text"]))
		}
	}
	return strings.Join(texts, "")
}

// LatestToolResults returns the tool results after a request's last assistant
// message (the answers to the model's last tool calls), in order; nil when the
// conversation does not end with tool results.
func LatestToolResults(body map[string]any) []ToolResult {
	msgs, _ := body["messages"].([]any)
	start := 0
	for i, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			start = i + 1
		}
	}
	var out []ToolResult
	for _, m := range msgs[start:] {
		mm, _ := m.(map[string]any)
		if mm["role"] == "tool" {
			id, _ := mm["tool_call_id"].(string)
			out = append(out, ToolResult{CallID: id, Text: contentText(mm["content"])})
			continue
		}
		blocks, _ := mm["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] == "tool_result" {
				id, _ := bm["tool_use_id"].(string)
				isErr, _ := bm["is_error"].(bool)
				out = append(out, ToolResult{CallID: id, Text: contentText(bm["content"]), IsError: isErr})
			}
		}
	}
	return out
}
