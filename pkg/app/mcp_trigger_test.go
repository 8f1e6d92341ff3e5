package app_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Spec §3.2: a workflow triggered by mcp-server:// starts an MCP server, declared in
// YAML, that exposes the other workflows of the context.
func TestMCPServerTriggerFromYAML(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, `
workflows:
  - id: mcp-bridge
    trigger:
      uri: mcp-server://127.0.0.1:0?transport=http&name=my-tools&version=1.0.0
    steps: []
  - id: greet
    description: "Greet a person by name"
    trigger:
      uri: direct://greet
    steps:
      - transform:
          starlang: |
            name = payload.get("name", "World")
            "Hello, " ++ name ++ "!"
`)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	startBuilt(t, a)
	cs := mcpSession(t, a, "mcp-server://127.0.0.1:0")
	if info := cs.InitializeResult().ServerInfo; info.Name != "my-tools" || info.Version != "1.0.0" {
		t.Fatalf("server info %+v", info)
	}
	callCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tools, err := cs.ListTools(callCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "greet" {
		t.Fatalf("tools %+v: want only greet (the bridge itself is not a tool)", tools.Tools)
	}
	res, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "Hello, Ada!" {
		t.Fatalf("result %+v", res)
	}
}
