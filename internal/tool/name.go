package tool

import (
	"fmt"
	"strings"
)

// SanitizeName turns a workflow id into a tool name: dots, hyphens and
// slashes become underscores ("api.v2.users" → "api_v2_users"). MCP clients such as
// Claude Desktop only accept [A-Za-z0-9_] comfortably, and the spec fixes this
// mapping so that users can predict the name from the id.
func SanitizeName(id string) string {
	return toolNameReplacer.Replace(id)
}

var toolNameReplacer = strings.NewReplacer(".", "_", "-", "_", "/", "_")

// CheckName reports characters that MCP tool names may not contain (the
// protocol allows letters, digits, '_', '-' and '.', at most 128 of them). The
// go-sdk only logs such names, and clients then refuse the whole tool list, so
// Helix rejects them when the server is built.
func CheckName(id, name string) error {
	if name == "" {
		return fmt.Errorf("workflow %q: empty tool name", id)
	}
	if len(name) > 128 {
		return fmt.Errorf("workflow %q: tool name %q is longer than 128 characters; use a shorter id", id, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("workflow %q: tool name %q contains %q; MCP tool names may only use letters, digits and '_' (rename the workflow)", id, name, string(r))
		}
	}
	return nil
}
