package app_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

const mcpYAML = `
helix:
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: "my-helix-tools"
        version: "1.2.3"
      - enabled: false
        addr: "127.0.0.1:1"
        name: "disabled"
workflows:
  - id: greet
    description: "Greet a person by name"
    trigger:
      uri: direct://greet
    steps:
      - transform:
          starlang: |
            name = payload.get("name", "World")
            "Hello, " ++ name ++ "!"
tools:
  - id: search
    description: "Search knowledge base"
    input:
      query: { type: string, description: "Search query", required: true }
      limit: { type: integer, description: "Max results", default: 10 }
    output:
      results: { type: array, description: "Matching documents" }
      total: { type: integer, description: "Total matches" }
    steps:
      - transform:
          starlang: |
            write({"results": [payload["query"]], "total": payload["limit"]}, "application/json")
mcps:
  - id: search-only
    addr: "127.0.0.1:0"
    expose: [search]
`

func buildYAML(t *testing.T, yaml string) (*app.App, error) {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(yaml))
	if err != nil {
		return nil, err
	}
	return app.Build(cfg, quiet)
}

func mcpSession(t *testing.T, a *app.App, id string) *sdk.ClientSession {
	t.Helper()
	endpoint := serverURL(t, a, id) + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "app-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestMCPServersFromConfig(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, mcpYAML)
	if err != nil {
		t.Fatal(err)
	}
	infos := a.MCPServers().Servers()
	if len(infos) != 2 || infos[0].ID != "my-helix-tools" || infos[1].ID != "search-only" || infos[1].Name != "search-only" {
		t.Fatalf("servers %+v", infos)
	}
	ctx := context.Background()
	startBuilt(t, a)
	callCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	all := mcpSession(t, a, "my-helix-tools")
	if info := all.InitializeResult().ServerInfo; info.Name != "my-helix-tools" || info.Version != "1.2.3" {
		t.Fatalf("server info %+v", info)
	}
	res, err := all.CallTool(callCtx, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil || res.IsError {
		t.Fatalf("greet: %v %+v", err, res)
	}
	if got := res.Content[0].(*sdk.TextContent).Text; got != "Hello, Ada!" {
		t.Fatalf("greet: %q", got)
	}

	only := mcpSession(t, a, "search-only")
	lt, err := only.ListTools(callCtx, nil)
	if err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "search" || lt.Tools[0].OutputSchema == nil {
		t.Fatalf("search-only tools: %v %+v", err, lt)
	}
	res, err = only.CallTool(callCtx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "go"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if string(sc) != `{"results":["go"],"total":10}` {
		t.Fatalf("structured content %s", sc)
	}
	res, err = only.CallTool(callCtx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"limit": 2}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "query") {
		t.Fatalf("missing query: %v %+v", err, res)
	}
}

func TestMCPUnknownExposeWarnsThenFailsStart(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, `
workflows:
  - id: greet
    trigger: direct://greet
    steps: []
mcps:
  - id: t
    addr: "127.0.0.1:0"
    expose: [greet, nope]
`)
	if err != nil {
		t.Fatalf("a snippet referring to workflows of another file must validate: %v", err)
	}
	w := a.Config().Warnings.Error()
	for _, want := range []string{"helix.yaml:7:5", "mcps[0]", `"nope"`} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %s", w, want)
		}
	}
	err = a.Start(context.Background())
	if err == nil {
		_ = a.Stop(context.Background())
		t.Fatal("started a server exposing an unknown id")
	}
	if !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("start error %v", err)
	}
}

func TestMCPConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{
			name: "clashing tool names",
			yaml: `
workflows:
  - id: a-b
    trigger: direct://x
    steps: []
  - id: a.b
    trigger: direct://y
    steps: []
helix:
  mcp:
    servers:
      - enabled: true
        addr: "127.0.0.1:0"
`,
			want: []string{"helix.yaml:6:5", `"a_b"`, "helix.yaml:12:9"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := buildYAML(t, tc.yaml)
			if err == nil {
				t.Fatal("built without error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %s", err, w)
				}
			}
		})
	}
}

// examples/mcp-tools.yaml runs: its tools validate input, apply defaults and answer
// with structured content.
func TestMCPToolsExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../examples/mcp-tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const exampleAddr = `addr: "127.0.0.1:${env:MCP_TOOLS_PORT:-3150}"`
	if !strings.Contains(string(src), exampleAddr) {
		t.Fatalf("examples/mcp-tools.yaml no longer contains %s; update this test", exampleAddr)
	}
	a, err := buildYAML(t, strings.Replace(string(src), exampleAddr, `addr: "127.0.0.1:0"`, 1))
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	cs := mcpSession(t, a, "my-tools")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		want    string
		isError bool
	}{
		{"translate", map[string]any{"text": "Hello world", "target_lang": "fr"}, `{"confidence":1,"translated":"bonjour monde"}`, false},
		{"translate", map[string]any{"text": "good day", "target_lang": "de"}, `{"confidence":0.5,"translated":"guten day"}`, false},
		{"translate", map[string]any{"text": "hi", "source_lang": "fr", "target_lang": "fr"}, `{"confidence":1,"translated":"hi"}`, false},
		{"translate", map[string]any{"text": "hi", "target_lang": "xx"}, "cannot translate from en to xx", true},
		{"translate", map[string]any{"text": "hi"}, "target_lang", true},
		{"search", map[string]any{"query": "go"}, `{"results":[],"total":0}`, false},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: %v", tc.tool, tc.args, err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if res.IsError != tc.isError || (tc.isError && !strings.Contains(text, tc.want)) || (!tc.isError && text != tc.want) {
			t.Errorf("%s %v: isError=%v %q, want %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}
}
