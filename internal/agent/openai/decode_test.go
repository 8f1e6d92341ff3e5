package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/arvenza/helix/internal/agent"
)

// sdkDecode reads a body as the provider did before it decoded responses itself:
// the SDK's decoding into a ChatCompletion (encoding/json's decoder, then the
// SDK's own UnmarshalJSON), then response.
func sdkDecode(body []byte) (*agent.ModelResponse, error) {
	var c sdk.ChatCompletion
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&c); err != nil {
		return nil, err
	}
	return response(&c)
}

// jsonText is s as a JSON string, written in one of the ways a server may write
// it: encoding/json's escapes, every non-ASCII rune as \u escapes (surrogate
// pairs included), or raw bytes with only the necessary escapes (invalid UTF-8
// passes through as is).
func jsonText(r *rand.Rand, s string) string {
	switch r.IntN(3) {
	case 0:
		b, _ := json.Marshal(s)
		return string(b)
	case 1:
		var b strings.Builder
		b.WriteByte('"')
		for _, c := range s {
			switch {
			case c == '"' || c == '\\':
				b.WriteString(`\` + string(c))
			case c < 0x20 || c > 0x7e:
				if c > 0xffff {
					c -= 0x10000
					fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(c>>10), 0xdc00+(c&0x3ff))
				} else {
					fmt.Fprintf(&b, `\u%04X`, c)
				}
			default:
				b.WriteRune(c)
			}
		}
		b.WriteByte('"')
		return b.String()
	default:
		var b strings.Builder
		b.WriteByte('"')
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"' || c == '\\':
				b.WriteString(`\` + string(c))
			case c < 0x20:
				fmt.Fprintf(&b, `\u%04x`, c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
}

// object writes a JSON object of the members in a random order, sometimes with
// a member given twice (its second value a decoy: the first one counts).
func object(r *rand.Rand, members ...string) string {
	members = nonEmpty(members)
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	if len(members) > 0 && r.IntN(8) == 0 {
		m := members[r.IntN(len(members))]
		key := m[:strings.Index(m, ":")]
		members = append(members, key+`:"decoy"`)
	}
	sep := pick(r, []string{",", ", ", ",\n  "})
	return "{" + strings.Join(members, sep) + "}"
}

func nonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// maybe is the member key:value, key:null or nothing.
func maybe(r *rand.Rand, key, value string) string {
	switch r.IntN(5) {
	case 0:
		return ""
	case 1:
		return `"` + key + `":null`
	}
	return `"` + key + `":` + value
}

func randomToolCall(r *rand.Rand, i int) string {
	id := jsonText(r, pick(r, []string{fmt.Sprintf("call_%d", i), "", "call \"x\" é"}))
	args := jsonText(r, pick(r, argTexts))
	name := jsonText(r, pick(r, []string{"echo", "ns.tool-x", "ü", ""}))
	switch r.IntN(6) {
	case 0: // a custom tool's call: not the provider's
		return object(r, `"id":`+id, `"type":"custom"`, `"custom":`+object(r, `"name":`+name, `"input":"raw text"`))
	case 1: // no type
		return object(r, `"id":`+id, `"function":`+object(r, `"name":`+name, `"arguments":`+args))
	}
	return object(r, `"id":`+id, `"type":"function"`, `"function":`+object(r, maybe(r, "name", name), maybe(r, "arguments", args)))
}

func randomChoice(r *rand.Rand, index int) string {
	var calls []string
	for i := range r.IntN(4) {
		calls = append(calls, randomToolCall(r, i))
	}
	toolCalls := "[" + strings.Join(calls, ",") + "]"
	message := object(r, `"role":"assistant"`,
		maybe(r, "content", jsonText(r, pick(r, texts))),
		maybe(r, "refusal", jsonText(r, pick(r, texts))),
		maybe(r, "tool_calls", toolCalls),
		pick(r, []string{"", `"annotations":[]`, `"audio":null`, `"function_call":null`}))
	return object(r, fmt.Sprintf(`"index":%d`, index), maybe(r, "message", message),
		maybe(r, "finish_reason", jsonText(r, pick(r, []string{"stop", "tool_calls", "length", "content_filter", "something_new", ""}))),
		`"logprobs":null`)
}

// randomResponse makes a well-formed Chat Completions response, as OpenAI and
// compatible servers write them.
func randomResponse(r *rand.Rand) string {
	var choices []string
	for i := range r.IntN(3) + 1 {
		choices = append(choices, randomChoice(r, i))
	}
	if r.IntN(20) == 0 {
		choices = nil
	}
	usage := object(r, maybe(r, "prompt_tokens", pick(r, []string{"0", "12", "100000", "1e2", "9007199254740993"})),
		maybe(r, "completion_tokens", pick(r, []string{"0", "7", "-1"})), `"total_tokens":19`,
		pick(r, []string{"", `"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}`}))
	return object(r, `"id":"chatcmpl-1"`, `"object":"chat.completion"`, `"created":1764576000`, `"model":"gpt-4o-mini"`,
		maybe(r, "choices", "["+strings.Join(choices, ",")+"]"), maybe(r, "usage", usage),
		pick(r, []string{"", `"system_fingerprint":"fp_1"`, `"service_tier":"default"`}))
}

// Well-formed responses decode exactly as the SDK decodes them.
func TestDecodeCompletionMatchesSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1500 {
		body := []byte(randomResponse(r))
		got, err := decodeCompletion(body)
		want, sdkErr := sdkDecode(body)
		if (err != nil) != (sdkErr != nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("response %d: %s\ngot  %+v, %v\nSDK: %+v, %v", i, body, got, err, want, sdkErr)
		}
	}
}

// Values of the wrong type in the fields a turn needs are errors that name the
// field; the SDK would bend them into the field (a number as text, a null as an
// empty tool call) or lose the field silently. Nothing is read from the body
// into the message.
func TestDecodeCompletionErrors(t *testing.T) {
	for body, want := range map[string]string{
		``:                             "response is not valid JSON",
		`{"choices":[`:                 "response is not valid JSON",
		`{"choices":[]} trailing`:      "response is not valid JSON",
		`null`:                         "response has no choices",
		`{}`:                           "response has no choices",
		`{"choices":null}`:             "response has no choices",
		`{"choices":[]}`:               "response has no choices",
		`[{"choices":[]}]`:             "response is an array, not an object",
		`"sk-secret"`:                  "response is a string, not an object",
		`{"choices":{}}`:               "response: choices is an object, not an array",
		`{"choices":[1]}`:              "response: choices[0] is a number, not an object",
		`{"choices":[{"message":[]}]}`: "response: choices[0].message is an array, not an object",
		`{"choices":[{"message":{"content":5}}]}`:                                  "response: choices[0].message.content is a number, not a string",
		`{"choices":[{"message":{"refusal":{"x":1}}}]}`:                            "response: choices[0].message.refusal is an object, not a string",
		`{"choices":[{"finish_reason":true}]}`:                                     "response: choices[0].finish_reason is a boolean, not a string",
		`{"choices":[{"message":{"tool_calls":{}}}]}`:                              "response: choices[0].message.tool_calls is an object, not an array",
		`{"choices":[{"message":{"tool_calls":[{"id":"a"},null]}}]}`:               "response: choices[0].message.tool_calls[1] is null, not an object",
		`{"choices":[{"message":{"tool_calls":[{"id":7}]}}]}`:                      "response: choices[0].message.tool_calls[0].id is a number, not a string",
		`{"choices":[{"message":{"tool_calls":[{"function":"f"}]}}]}`:              "response: choices[0].message.tool_calls[0].function is a string, not an object",
		`{"choices":[{"message":{"tool_calls":[{"function":{"arguments":{}}}]}}]}`: "response: choices[0].message.tool_calls[0].function.arguments is an object, not a string",
		`{"choices":[{}],"usage":{"prompt_tokens":"12"}}`:                          "response: usage.prompt_tokens is a string, not a whole number",
		`{"choices":[{}],"usage":{"completion_tokens":1.5}}`:                       "response: usage.completion_tokens is a number, not a whole number",
		`{"choices":[{}],"usage":[]}`:                                              "response: usage is an array, not an object",
	} {
		got, err := decodeCompletion([]byte(body))
		var pe *agent.ProviderError
		if !errors.As(err, &pe) || pe.Message != want || pe.Provider != "openai" || pe.StatusCode != 0 || pe.Retryable() {
			t.Errorf("%s: got %+v, %v; want the error %q", body, got, err, want)
		}
	}
}

// FuzzDecodeCompletion: on any body, decoding never panics, and either gives the
// SDK's result or an error of its own (a provider error, not retryable); it
// never reads a body the SDK rejects.
func FuzzDecodeCompletion(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		f.Add([]byte(randomResponse(r)))
	}
	for _, s := range []string{``, `null`, `{}`, `[]`, `{"choices":[null]}`, `{"choices":[{"message":null}]}`,
		`{"choices":[{"message":{"tool_calls":[null]}}]}`, `{"choices":[{"message":{"content":"\ud800"}}]}`,
		`{"choices":[{"message":{"content":"a"}}],"choices":[]}`, "{\"choices\":[{\"message\":{\"content\":\"\x00\"}}]}",
		`{"choices":[{"message":{"content":"x"}}]}{}`, strings.Repeat("[", 5000), `{"usage":{"prompt_tokens":1e400}}`,
		`{"choices":[{}],"usage":{"prompt_tokens":-9223372036854775809}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeCompletion(body)
		want, sdkErr := sdkDecode(body)
		if err != nil {
			var pe *agent.ProviderError
			if !errors.As(err, &pe) || pe.Provider != "openai" || pe.Message == "" || pe.Retryable() {
				t.Fatalf("%q: error %#v", body, err)
			}
			return
		}
		if sdkErr != nil {
			t.Fatalf("%q: decoded %+v, which the SDK rejects: %v", body, got, sdkErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\ngot  %+v\nSDK: %+v", body, got, want)
		}
	})
}

// benchResponse is a tool call turn as the benchmark's model server answers it.
const benchResponse = `{"id":"chatcmpl-bench","object":"chat.completion","created":1764576000,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_1","type":"function",` +
	`"function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":100,"completion_tokens":12,"total_tokens":112},"system_fingerprint":"fp_bench"}`

func BenchmarkDecodeCompletion(b *testing.B) {
	body := []byte(benchResponse)
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeCompletion(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sdkDecode(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Nesting is limited as encoding/json limits it (the SDK's decoding): a body
// nested 10,000 levels deep in a field nobody reads decodes; one level more is
// an error, found without recursing (gjson's validation would recurse once per
// level, and a body of millions of brackets would exhaust the stack).
func TestDecodeCompletionDepth(t *testing.T) {
	nested := func(depth int) []byte {
		// The object itself is the first level, the array under "x" the rest.
		return []byte(`{"choices":[{"message":{"content":"ok"}}],"x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
	}
	got, err := decodeCompletion(nested(maxDepth))
	want, sdkErr := sdkDecode(nested(maxDepth))
	if err != nil || sdkErr != nil || !reflect.DeepEqual(got, want) || got.Message.Text != "ok" {
		t.Fatalf("depth %d: %+v, %v; SDK %+v, %v", maxDepth, got, err, want, sdkErr)
	}
	_, err = decodeCompletion(nested(maxDepth + 1))
	_, sdkErr = sdkDecode(nested(maxDepth + 1))
	if err == nil || err.Error() != "openai: response is nested more than 10000 levels deep" || sdkErr == nil {
		t.Fatalf("depth %d: err %v, SDK's %v", maxDepth+1, err, sdkErr)
	}
	// Brackets inside strings do not count.
	if _, err := decodeCompletion([]byte(`{"choices":[{"message":{"content":"` + strings.Repeat(`[\"{`, 20000) + `"}}]}`)); err != nil {
		t.Fatal(err)
	}
}
