package app_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// overrideWorkflows are the workflows the spec's §3.6 and §8.3 snippets describe:
// each answers with the arguments it received.
const overrideWorkflows = `
workflows:
  - id: process-order
    trigger: direct://process-order
    steps:
      - transform:
          starlang: |
            write(payload, "application/json")
  - id: create-ticket
    trigger: direct://create-ticket
    steps:
      - transform:
          starlang: |
            write(payload, "application/json")
  - id: query-customers
    trigger: direct://query-customers
    steps:
      - transform:
          starlang: |
            write(payload, "application/json")
`

// A snippet's server, on a free loopback port.
func specServer(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/spec/" + file)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), `addr: "0.0.0.0:3000"`, `addr: "127.0.0.1:0"`, 1)
	if s == string(data) {
		t.Fatalf("%s: no addr to replace", file)
	}
	return s
}

func callText(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

// `tools:` overrides under helix.mcp.servers (spec §3.6, §8.3, §12.1) are enforced
// like tools: entries: the input is validated and defaults are applied before any
// step runs. A null argument is described as null.
func TestToolOverridesAreEnforced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		check func(t *testing.T, cs *sdk.ClientSession)
	}{
		{"s3_6_tool_metadata.yaml", func(t *testing.T, cs *sdk.ClientSession) {
			if text, isErr := callText(t, cs, "process_order", map[string]any{}); !isErr || !strings.Contains(text, "orderId") {
				t.Errorf("missing orderId: %q isError=%v", text, isErr)
			}
			bad := map[string]any{"orderId": "o1", "items": []any{map[string]any{"sku": "a", "quantity": "two"}}}
			if text, isErr := callText(t, cs, "process_order", bad); !isErr || !strings.Contains(text, "quantity") {
				t.Errorf("quantity not an integer: %q isError=%v", text, isErr)
			}
			ok := map[string]any{"orderId": "o1", "items": []any{map[string]any{"sku": "a", "quantity": 2}}}
			if text, isErr := callText(t, cs, "process_order", ok); isErr || !strings.Contains(text, `"orderId":"o1"`) {
				t.Errorf("valid order: %q isError=%v", text, isErr)
			}
		}},
		{"s8_3_custom_schemas.yaml", func(t *testing.T, cs *sdk.ClientSession) {
			args := map[string]any{"title": "Login page broken", "description": "500 on /login", "priority": "urgent"}
			if text, isErr := callText(t, cs, "create_ticket", args); !isErr || !strings.Contains(text, "priority") {
				t.Errorf("priority outside the enum: %q isError=%v", text, isErr)
			}
			args = map[string]any{"title": nil, "description": "500 on /login"}
			text, isErr := callText(t, cs, "create_ticket", args)
			if !isErr || !strings.Contains(text, "null") || strings.Contains(text, "reflect") {
				t.Errorf("null title: %q isError=%v", text, isErr)
			}
			args = map[string]any{"title": "Login page broken", "description": "500 on /login", "priority": "high"}
			if text, isErr := callText(t, cs, "create_ticket", args); isErr || !strings.Contains(text, `"priority":"high"`) {
				t.Errorf("valid ticket: %q isError=%v", text, isErr)
			}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			a, err := buildYAML(t, specServer(t, tc.file)+overrideWorkflows)
			if err != nil {
				t.Fatal(err)
			}
			startBuilt(t, a)
			id := a.MCPServers().Servers()[0].ID
			tc.check(t, mcpSession(t, a, id))
		})
	}

	// §12.1's schema documents a default of 10 for limit in prose; with a default
	// keyword the override applies it, as tools: entries do.
	a, err := buildYAML(t, `
helix:
  mcp:
    servers:
      - enabled: true
        addr: "127.0.0.1:0"
        name: "db-tools"
        tools:
          query-customers:
            description: "Search customers by name, email, or ID"
            input_schema: |
              {
                "type": "object",
                "properties": {
                  "search": {"type": "string", "description": "Search term"},
                  "field": {"type": "string", "enum": ["name", "email", "id"], "description": "Field to search"},
                  "limit": {"type": "integer", "description": "Max results", "default": 10}
                },
                "required": ["search"]
              }
`+overrideWorkflows)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	cs := mcpSession(t, a, "db-tools")
	if text, isErr := callText(t, cs, "query_customers", map[string]any{"search": "ada"}); isErr || !strings.Contains(text, `"limit":10`) {
		t.Errorf("default not applied: %q isError=%v", text, isErr)
	}
	if text, isErr := callText(t, cs, "query_customers", map[string]any{"field": "name"}); !isErr || !strings.Contains(text, "search") {
		t.Errorf("missing search: %q isError=%v", text, isErr)
	}
}

// A null argument of a tools: entry is described as null too.
func TestNullArgumentIsDescribedAsNull(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, mcpYAML)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	cs := mcpSession(t, a, "search-only")
	text, isErr := callText(t, cs, "search", map[string]any{"query": nil})
	if !isErr || !strings.Contains(text, "null") || strings.Contains(text, "reflect") {
		t.Errorf("null query: %q isError=%v", text, isErr)
	}
}

func readEntries(t *testing.T, cs *sdk.ClientSession, uri string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	return rr.Contents[0].Text
}

// helix://workflows and helix://routes show each server its own tools, filtered
// like tools/list, with trigger URIs as written: ${env:HOOK_SECRET} stays unresolved.
func TestWorkflowsResourcePerServerWithoutSecrets(t *testing.T) {
	t.Setenv("HOOK_SECRET", "hook-s3cret")
	a, err := buildYAML(t, `
helix:
  mcp:
    servers:
      - enabled: true
        addr: "127.0.0.1:0"
        name: "public"
        workflows: [greet, hook]
mcps:
  - id: admin
    addr: "127.0.0.1:0"
    expose: [hook, admin-tool, greet]
    blocked_tools: [greet]
workflows:
  - id: greet
    trigger: direct://greet
    steps: []
  - id: hook
    description: "Called by the CI"
    trigger: http-server://127.0.0.1:0/hook/${env:HOOK_SECRET}
    steps: []
  - id: admin-tool
    trigger: direct://admin-tool
    steps: []
  - id: internal
    trigger: direct://internal
    steps: []
`)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	for _, tc := range []struct{ server, want string }{
		{"public", `[{"id":"greet","from_uri":"direct://greet","description":"","state":"Started"},` +
			`{"id":"hook","from_uri":"http-server://127.0.0.1:0/hook/${env:HOOK_SECRET}","description":"Called by the CI","state":"Started"}]`},
		{"admin", `[{"id":"hook","from_uri":"http-server://127.0.0.1:0/hook/${env:HOOK_SECRET}","description":"Called by the CI","state":"Started"},` +
			`{"id":"admin-tool","from_uri":"direct://admin-tool","description":"","state":"Started"}]`},
	} {
		cs := mcpSession(t, a, tc.server)
		for _, uri := range []string{"helix://workflows", "helix://routes"} {
			text := readEntries(t, cs, uri)
			var v any
			if err := json.Unmarshal([]byte(text), &v); err != nil {
				t.Fatal(err)
			}
			compact, _ := json.Marshal(v)
			var want any
			_ = json.Unmarshal([]byte(tc.want), &want)
			wantJSON, _ := json.Marshal(want)
			if string(compact) != string(wantJSON) || strings.Contains(text, "hook-s3cret") {
				t.Errorf("%s %s:\n%s\nwant\n%s", tc.server, uri, compact, wantJSON)
			}
		}
	}
}
