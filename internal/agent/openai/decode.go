package openai

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/arvenza/helix/internal/agent"
)

// decodeCompletion reads a Chat Completions response body into a turn: the first
// choice's message (content, or the refusal when there is no content, and its
// function tool calls), its finish reason and the usage. It reads only those
// fields, with gjson, the parser under the SDK's own decoder, so that it sees
// the same values (escapes, duplicate keys: the first one counts) without
// building the SDK's whole ChatCompletion by reflection. Where the SDK would
// bend a value of the wrong type into a field (a number as content, an object
// as a tool call's id) this is an error naming the field; null is as absent.
// decode_test.go holds it to the SDK's decoding.
func decodeCompletion(body []byte) (*agent.ModelResponse, error) {
	if tooDeep(body) {
		return nil, errorf("response is nested more than %d levels deep", maxDepth)
	}
	if !gjson.ValidBytes(body) {
		return nil, errorf("response is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if root.Type == gjson.Null {
		return nil, errorf("response has no choices")
	}
	if !root.IsObject() {
		return nil, errorf("response is %s, not an object", kind(root))
	}
	var d decoder
	var top [2]gjson.Result
	members(root, top[:], "choices", "usage")
	choices, usage := top[0], top[1]
	var choice gjson.Result
	if d.check(choices, "choices", isArray) {
		choices.ForEach(func(_, v gjson.Result) bool {
			choice = v
			return false
		})
	}
	if !choice.Exists() {
		if d.err != nil {
			return nil, d.err
		}
		return nil, errorf("response has no choices")
	}
	out := &agent.ModelResponse{Message: agent.Message{Role: agent.RoleAssistant}}
	var c [2]gjson.Result
	var msg [3]gjson.Result
	if d.check(choice, "choices[0]", isObject) {
		members(choice, c[:], "message", "finish_reason")
		out.StopReason = d.str(c[1], "choices[0].finish_reason")
	}
	if d.check(c[0], "choices[0].message", isObject) {
		members(c[0], msg[:], "content", "refusal", "tool_calls")
		out.Message.Text = d.str(msg[0], "choices[0].message.content")
		if refusal := d.str(msg[1], "choices[0].message.refusal"); out.Message.Text == "" {
			out.Message.Text = refusal
		}
	}
	if d.check(msg[2], "choices[0].message.tool_calls", isArray) {
		msg[2].ForEach(func(_, v gjson.Result) bool {
			if tc, ok := d.toolCall(v); ok {
				out.Message.ToolCalls = append(out.Message.ToolCalls, tc)
			}
			d.call++
			return d.err == nil
		})
	}
	if d.check(usage, "usage", isObject) {
		var u [2]gjson.Result
		members(usage, u[:], "prompt_tokens", "completion_tokens")
		out.Usage.InputTokens = d.int(u[0], "usage.prompt_tokens")
		out.Usage.OutputTokens = d.int(u[1], "usage.completion_tokens")
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}

// maxDepth is how deeply arrays and objects may nest in a response: the limit
// of encoding/json, which the SDK decodes with.
const maxDepth = 10000

// tooDeep reports whether body nests arrays and objects more than maxDepth
// deep. gjson's validation recurses once per level, so a body of millions of
// brackets would exhaust the stack; this scan does not recurse and stops at the
// limit. It need not be exact on invalid JSON, which validation rejects next.
func tooDeep(body []byte) bool {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > maxDepth {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

// members sets into[i] to the value of the member keys[i] of the object obj,
// the first one when a key is given twice (as gjson's Map, and so the SDK,
// reads it).
func members(obj gjson.Result, into []gjson.Result, keys ...string) {
	obj.ForEach(func(k, v gjson.Result) bool {
		for i, key := range keys {
			if k.Str == key && !into[i].Exists() {
				into[i] = v
			}
		}
		return true
	})
}

// decoder keeps the first type error met; later reads are skipped. call is the
// index of the tool call being read.
type decoder struct {
	err  error
	call int
}

const (
	isObject = iota
	isArray
)

// check reports whether v is present, not null, and an object or an array as
// want says; a value of another type is an error.
func (d *decoder) check(v gjson.Result, path string, want int) bool {
	if d.err != nil || !v.Exists() || v.Type == gjson.Null {
		return false
	}
	if want == isObject && v.IsObject() || want == isArray && v.IsArray() {
		return true
	}
	d.fail(path, v, [...]string{"an object", "an array"}[want])
	return false
}

// fail keeps the error of a value of the wrong type at path; "[i]" in path is
// the index of the tool call being read (the path is built only here, on error).
func (d *decoder) fail(path string, v gjson.Result, want string) {
	path = strings.Replace(path, "[i]", "["+strconv.Itoa(d.call)+"]", 1)
	d.err = errorf("response: %s is %s, not %s", path, kind(v), want)
}

func (d *decoder) str(v gjson.Result, path string) string {
	if d.err != nil || v.Type == gjson.Null {
		return ""
	}
	if v.Type != gjson.String {
		d.fail(path, v, "a string")
		return ""
	}
	return v.Str
}

// int reads a token count: a JSON number without a fraction (1e2 is 100, as the
// SDK reads it).
func (d *decoder) int(v gjson.Result, path string) int64 {
	if d.err != nil || v.Type == gjson.Null {
		return 0
	}
	if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) || math.Abs(v.Num) > 1<<63 {
		d.fail(path, v, "a whole number")
		return 0
	}
	return v.Int()
}

// toolCall reads tool_calls[d.call]; ok is false for a tool call of another
// type than "function" (custom tools, which the provider never offers). A null
// tool call is an error: the SDK would make an empty call of it.
func (d *decoder) toolCall(v gjson.Result) (tc agent.ToolCall, ok bool) {
	const path = "choices[0].message.tool_calls[i]"
	if v.Type == gjson.Null {
		d.fail(path, v, "an object")
		return tc, false
	}
	if !d.check(v, path, isObject) {
		return tc, false
	}
	var m [3]gjson.Result
	members(v, m[:], "id", "type", "function")
	tc.ID = d.str(m[0], path+".id")
	if typ := d.str(m[1], path+".type"); typ != "" && typ != "function" {
		return tc, false
	}
	var args string
	if d.check(m[2], path+".function", isObject) {
		var fn [2]gjson.Result
		members(m[2], fn[:], "name", "arguments")
		tc.Name = d.str(fn[0], path+".function.name")
		args = d.str(fn[1], path+".function.arguments")
	}
	tc.Arguments = []byte(args)
	return tc, d.err == nil
}

// kind names v's JSON type for an error message.
func kind(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	if v.IsArray() {
		return "an array"
	}
	if v.IsObject() {
		return "an object"
	}
	return "not JSON"
}

// errorf is a provider error for a response that could not be read: no status
// (the request itself succeeded), not retryable. The message holds field names
// and types, never the body's values.
func errorf(format string, args ...any) error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &agent.ProviderError{Provider: "openai", Message: msg}
}
