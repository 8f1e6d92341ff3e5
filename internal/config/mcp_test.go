package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The spec's two spellings of a server (§13 recipe 4 under helix.mcp.servers, §1
// under mcps:) decode into the same model: once defaults are applied, only the
// YAML path tells them apart.
func TestMCPServerSpellingsDecodeAlike(t *testing.T) {
	body := `
        transport: http
        addr: "127.0.0.1:3001"
        version: "2.0"
        stateless: true
        session_idle_timeout: 5m
        http_transport: sdk
        fast_tool_calls: false
        max_sessions: 50
        api_keys: [k1]
        rate_limit: 60
        read_timeout: 2s
        tools:
          debug-query:
            description: "Run a query"
            input_schema: '{"type":"object"}'`
	helixCfg, errs := load(t, `
helix:
  mcp:
    servers:
      - enabled: true
        name: dev-tools
        workflows: [debug-query, tail-logs]`+body+`
`)
	if errs != nil {
		t.Fatal(errs)
	}
	mcpsCfg, errs := load(t, `
mcps:
  - id: dev-tools
    expose: [debug-query, tail-logs]`+strings.ReplaceAll(body, "\n    ", "\n")+`
`)
	if errs != nil {
		t.Fatal(errs)
	}
	h, m := helixCfg.MCPServers(), mcpsCfg.MCPServers()
	if len(h) != 1 || len(m) != 1 {
		t.Fatalf("servers: %d and %d, want 1 and 1", len(h), len(m))
	}
	if h[0].Path != "helix.mcp.servers[0]" || m[0].Path != "mcps[0]" {
		t.Errorf("paths %q and %q", h[0].Path, m[0].Path)
	}
	if h[0].ID != "dev-tools" || h[0].Name != "dev-tools" || !h[0].Stateless || h[0].SessionIdleTimeout != 5*time.Minute ||
		h[0].FastToolCallsOn() || h[0].MaxSessions != 50 || h[0].RateLimit != 60 || h[0].Listener.ReadTimeout != 2*time.Second ||
		h[0].Tools["debug-query"].Description != "Run a query" {
		t.Errorf("helix.mcp.servers entry: %+v", h[0])
	}
	// Positions differ with the layout; the rest must not.
	for _, s := range []*MCPServerConfig{&h[0], &m[0]} {
		s.Path, s.Pos, s.Enabled = "", Pos{}, false
		for k, o := range s.Tools {
			o.Pos = Pos{}
			s.Tools[k] = o
		}
	}
	if !reflect.DeepEqual(h[0], m[0]) {
		t.Errorf("the two spellings differ:\nhelix.mcp.servers: %+v\nmcps:              %+v", h[0], m[0])
	}
}

func TestMCPServersList(t *testing.T) {
	cfg, errs := load(t, `
helix:
  mcp:
    servers:
      - enabled: true
        transport: stdio
      - name: off
        addr: 127.0.0.1:3009
      - enabled: true
        name: named
        workflows: []
      - enabled: true
        id: both
        name: "Both Tools"
        expose: []
mcps:
  - id: short
  - id: long
    name: "Long Name"
    expose: [a]
`)
	if errs != nil {
		t.Fatal(errs)
	}
	type row struct {
		id, name, path string
		expose         []string
	}
	var got []row
	for _, s := range cfg.MCPServers() {
		got = append(got, row{s.ID, s.Name, s.Path, s.Expose})
	}
	want := []row{
		{"helix.mcp.servers[0]", "", "helix.mcp.servers[0]", nil},  // no name: the server's default name
		{"named", "named", "helix.mcp.servers[2]", nil},            // workflows: [] means all (spec §5.1)
		{"both", "Both Tools", "helix.mcp.servers[3]", []string{}}, // expose: [] means none
		{"short", "short", "mcps[0]", nil},
		{"long", "Long Name", "mcps[1]", []string{"a"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MCPServers():\n got %#v\nwant %#v", got, want)
	}
	if len(cfg.Helix.MCP.Servers) != 4 {
		t.Errorf("helix.mcp.servers keeps disabled entries: %d, want 4", len(cfg.Helix.MCP.Servers))
	}
}

// Servers built in Go, without Path, get the path of their place in the list.
func TestMCPServersBuiltInGo(t *testing.T) {
	cfg := &Config{}
	cfg.Helix.MCP.Servers = []MCPServerConfig{{Enabled: true, Addr: "127.0.0.1:3000", Expose: []string{"greet"}}}
	cfg.MCPs = []MCPConfig{{ID: "m"}} // the deprecated name still compiles
	got := cfg.MCPServers()
	if len(got) != 2 || got[0].ID != "helix.mcp.servers[0]" || got[0].Path != "helix.mcp.servers[0]" || got[1].Path != "mcps[0]" || got[1].Name != "m" {
		t.Errorf("MCPServers(): %+v", got)
	}
}

func TestMCPServerKeyMistakes(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"expose and workflows", `
helix:
  mcp:
    servers:
      - enabled: true
        workflows: [a]
        expose: [b]
`, []string{"helix.yaml:7:17: helix.mcp.servers[0].expose: workflows and expose are the same setting: write one of them"}},
		{"workflows in mcps", `
mcps:
  - id: m
    workflows: [a]
`, []string{`helix.yaml:4:5: mcps[0]: unknown key "workflows" in an mcps entry (an mcps: entry lists the ids to offer as tools under expose:`}},
		{"enabled in mcps", `
mcps:
  - id: m
    enabled: true
`, []string{`helix.yaml:4:5: mcps[0]: unknown key "enabled" in an mcps entry (every mcps: entry runs`}},
		{"mcps without id", `
mcps:
  - addr: 127.0.0.1:3000
`, []string{`helix.yaml:3:5: mcps[0]: an mcps entry is missing required key "id"`}},
		{"duplicate id across the lists", `
helix:
  mcp:
    servers:
      - enabled: true
        id: tools
mcps:
  - id: tools
`, []string{`helix.yaml:8:5: duplicate MCP server id "tools": already used at helix.yaml:5:9`}},
		{"misspelled key", `
mcps:
  - id: m
    fast_tool_call: false
`, []string{`helix.yaml:4:5: mcps[0]: unknown key "fast_tool_call" in an mcps entry`, `did you mean "fast_tool_calls"?`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := load(t, c.src)
			if errs == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(errs.Error(), w) {
					t.Errorf("errors:\n%v\nwant %q", errs, w)
				}
			}
		})
	}
}

// An override's input_schema may be written as YAML: it is kept as the same JSON
// text as the JSON form, keywords such as $schema and $defs included.
func TestToolOverrideInputSchemaAsYAML(t *testing.T) {
	cfg, errs := load(t, `
mcps:
  - id: m
    tools:
      a:
        input_schema:
          $schema: "https://json-schema.org/draft/2020-12/schema"
          type: object
          $defs: {n: {type: integer, minimum: 1}}
          properties: {count: {$ref: "#/$defs/n"}}
          additionalProperties: false
      b:
        input_schema: '{"$defs":{"n":{"minimum":1,"type":"integer"}},"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"count":{"$ref":"#/$defs/n"}},"type":"object"}'
`)
	if errs != nil {
		t.Fatal(errs)
	}
	tools := cfg.MCPServers()[0].Tools
	if a, b := tools["a"].InputSchema, tools["b"].InputSchema; a != b {
		t.Errorf("YAML form %s\nJSON form %s", a, b)
	}
	_, errs = load(t, `
mcps:
  - id: m
    tools:
      a:
        input_schema: [type, object]
`)
	if errs == nil || !strings.Contains(errs.Error(), "helix.yaml:6:23: mcps[0].tools.a.input_schema") {
		t.Errorf("a list as input_schema: %v", errs)
	}
}
