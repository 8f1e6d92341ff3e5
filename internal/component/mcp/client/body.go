package client

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ArgumentsFromBody converts an exchange body into the arguments of an MCP tool call,
// following the mcp:// component page:
//
//   - map[string]any is used as is;
//   - string, []byte and json.RawMessage are JSON-decoded; a text that is not a JSON
//     object (not JSON at all, or an array, a number …) is wrapped as {"input": text};
//   - nil gives {};
//   - anything else is wrapped as {"input": fmt.Sprintf("%v", body)}.
//
// The integration guide (§4.4) instead JSON-marshals "any other type" and shapes the
// result like a string; the component page is the reference for this component, so a
// []any body, say, becomes {"input": "[a b]"}, not {"input": "[\"a\",\"b\"]"}.
//
// The returned map is never nil, so the call always carries an arguments object.
// Safe for concurrent use.
func ArgumentsFromBody(body any) map[string]any {
	switch b := body.(type) {
	case nil:
		return map[string]any{}
	case map[string]any:
		if b == nil {
			return map[string]any{}
		}
		return b
	case string:
		return argumentsFromText([]byte(b), b)
	case []byte:
		return argumentsFromText(b, string(b))
	case json.RawMessage:
		return argumentsFromText(b, string(b))
	default:
		return map[string]any{"input": fmt.Sprintf("%v", body)}
	}
}

// argumentsFromText decodes a JSON object, or wraps the raw text. A JSON null is not
// an object either: it is wrapped like any other non-object text.
func argumentsFromText(data []byte, raw string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err == nil && m != nil {
		return m
	}
	return map[string]any{"input": raw}
}

// BodyFromResult unpacks a tool result into an exchange body, in the order the mcp://
// component page gives: the concatenated text of the TextContent items, else the JSON
// of StructuredContent, else "". Non-text content (images, audio, resources) is not
// text and is skipped. Safe for concurrent use.
func BodyFromResult(res *sdk.CallToolResult) (string, error) {
	if res == nil {
		return "", nil
	}
	var b strings.Builder
	found := false
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
			found = true
		}
	}
	if found {
		return b.String(), nil
	}
	if res.StructuredContent != nil {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", fmt.Errorf("encode structured content of the tool result: %w", err)
		}
		return string(data), nil
	}
	return "", nil
}
