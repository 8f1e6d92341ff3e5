package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/arvenza/helix/internal/agent"
)

// The Chat Completions request body is written here directly, by appending JSON,
// instead of building the SDK's ChatCompletionNewParams and letting its
// reflective encoder walk them: the messages, which change every iteration, were
// the largest part of the provider's own CPU per iteration. What changes only
// with the configuration (tools, output schema) is still encoded by the SDK's
// own encoder, once per tool set or schema, and spliced in. encode_test.go
// checks that the body is the same JSON value as the SDK's encoding of the
// params the provider built before (sdkParams there).

// requestBody is the JSON body of a Chat Completions request for req; stream
// asks for a streamed answer with the usage in its last chunk.
func (m *Model) requestBody(req *agent.ModelRequest, stream bool) ([]byte, error) {
	tools, err := m.encodedTools(req.Tools)
	if err != nil {
		return nil, err
	}
	var schema []byte
	if len(req.OutputSchema) > 0 {
		if schema, err = m.encodedSchema(req.OutputSchema); err != nil {
			return nil, err
		}
	}
	// One allocation for the whole body in the usual case: the texts, the
	// spliced parts and room for the keys and escapes around them.
	size := 256 + len(m.cfg.Model) + len(req.System) + len(tools) + len(schema)
	for i := range req.Messages {
		msg := &req.Messages[i]
		size += 48 + len(msg.Text) + len(msg.ToolCallID)
		for _, tc := range msg.ToolCalls {
			size += 64 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)*5/4
		}
	}
	b := make([]byte, 0, size)

	b = append(b, `{"model":`...)
	b = appendString(b, m.cfg.Model)
	if m.cfg.Temperature != nil {
		b = append(b, `,"temperature":`...)
		b = appendFloat(b, *m.cfg.Temperature)
	}
	if m.cfg.MaxTokens > 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(m.cfg.MaxTokens), 10)
	}
	// No messages at all (which the API refuses) is no "messages", as the SDK
	// leaves out an empty list.
	if req.System != "" || len(req.Messages) > 0 {
		b = append(b, `,"messages":[`...)
		if req.System != "" {
			b = append(b, `{"role":"system","content":`...)
			b = appendString(b, req.System)
			b = append(b, '}')
		}
		for i := range req.Messages {
			if i > 0 || req.System != "" {
				b = append(b, ',')
			}
			b = appendMessage(b, &req.Messages[i])
		}
		b = append(b, ']')
	}
	if tools != nil {
		b = append(b, `,"tools":`...)
		b = append(b, tools...)
		b = append(b, `,"parallel_tool_calls":`...)
		b = strconv.AppendBool(b, req.ParallelToolCalls)
	}
	if schema != nil {
		b = append(b, `,"response_format":`...)
		b = append(b, schema...)
	}
	if stream {
		// stream_options.include_usage: OpenAI sends the usage in a last chunk only
		// when asked.
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(b, '}'), nil
}

// appendMessage appends one conversation message as the SDK's message params
// encode it (see toParam in encode_test.go).
func appendMessage(b []byte, msg *agent.Message) []byte {
	switch msg.Role {
	case agent.RoleTool:
		b = append(b, `{"role":"tool","content":`...)
		b = appendString(b, msg.Text)
		b = append(b, `,"tool_call_id":`...)
		b = appendString(b, msg.ToolCallID)
	case agent.RoleAssistant:
		b = append(b, `{"role":"assistant"`...)
		if msg.Text != "" {
			b = append(b, `,"content":`...)
			b = appendString(b, msg.Text)
		}
		if len(msg.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for i, tc := range msg.ToolCalls {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"type":"function","id":`...)
				b = appendString(b, tc.ID)
				b = append(b, `,"function":{"name":`...)
				b = appendString(b, tc.Name)
				// The API takes the arguments as the text the model wrote, a string.
				b = append(b, `,"arguments":`...)
				if len(tc.Arguments) == 0 {
					b = append(b, `"{}"`...)
				} else {
					b = appendString(b, tc.Arguments)
				}
				b = append(b, "}}"...)
			}
			b = append(b, ']')
		}
	default:
		b = append(b, `{"role":"user","content":`...)
		b = appendString(b, msg.Text)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json (and so the SDK) writes it; the error that reports it is
// dropped for that reason.
func appendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b, _ = jsontext.AppendQuote(b, s)
	return b
}

// appendFloat appends f as encoding/json writes a float64; f is finite (New
// checks the temperature).
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}

// encodedTools is the request's "tools" array for defs, nil for none: the SDK's
// encoding of the function tools, made once per tool set and reused while the
// definitions compare equal (an agent shows the model the same tools every
// iteration). The result is shared between requests and only read.
func (m *Model) encodedTools(defs []agent.ToolDef) ([]byte, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	if c := m.tools.Load(); c != nil && sameTools(c.defs, defs) {
		return c.encoded, nil
	}
	params := make([]sdk.ChatCompletionToolUnionParam, 0, len(defs))
	c := &convertedTools{defs: make([]agent.ToolDef, len(defs))}
	for i, d := range defs {
		var fp shared.FunctionParameters
		if err := json.Unmarshal(d.InputSchema, &fp); err != nil {
			return nil, fmt.Errorf("openai: tool %s: input schema: %w", d.Name, err)
		}
		params = append(params, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: d.Name, Description: sdk.String(d.Description), Parameters: fp}))
		c.defs[i] = agent.ToolDef{Name: d.Name, Description: d.Description, InputSchema: bytes.Clone(d.InputSchema)}
	}
	encoded, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("openai: tools: %w", err)
	}
	c.encoded = encoded
	m.tools.Store(c)
	return c.encoded, nil
}

// convertedTools is a tool set and its encoding. defs is a copy (schemas
// included) that is compared with the next request's tools, so a caller that
// changes its definitions in place still gets them encoded anew.
type convertedTools struct {
	defs    []agent.ToolDef
	encoded []byte
}

func sameTools(a, b []agent.ToolDef) bool {
	return slices.EqualFunc(a, b, func(x, y agent.ToolDef) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.InputSchema, y.InputSchema)
	})
}

// encodedSchema is the request's "response_format" for an output schema, the
// SDK's encoding made once per schema (the agent sends the same one with every
// request of a run).
func (m *Model) encodedSchema(raw json.RawMessage) ([]byte, error) {
	if c := m.schema.Load(); c != nil && bytes.Equal(c.raw, raw) {
		return c.encoded, nil
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("openai: output schema: %w", err)
	}
	encoded, err := json.Marshal(sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: schema}}})
	if err != nil {
		return nil, fmt.Errorf("openai: output schema: %w", err)
	}
	m.schema.Store(&encodedSchema{raw: bytes.Clone(raw), encoded: encoded})
	return encoded, nil
}

// encodedSchema is an output schema as the caller gave it and its encoding.
type encodedSchema struct {
	raw, encoded []byte
}
