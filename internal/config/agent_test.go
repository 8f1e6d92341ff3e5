package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// setAgentEnv sets the variables the spec's agent examples reference.
func setAgentEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"MCP_TOKEN", "VENDOR_API_KEY", "OAUTH_CLIENT_ID", "OAUTH_CLIENT_SECRET", "DATABASE_URL"} {
		t.Setenv(k, "value-of-"+k)
	}
}

// agentSteps decodes every agent: step of cfg's tools and workflows.
func agentSteps(t *testing.T, file string, cfg *Config) []AgentConfig {
	t.Helper()
	var steps []StepConfig
	for _, tl := range cfg.Tools {
		steps = append(steps, tl.Steps...)
	}
	for _, w := range cfg.Workflows {
		steps = append(steps, w.Steps...)
	}
	var out []AgentConfig
	for _, s := range steps {
		if s.Kind != "agent" {
			continue
		}
		d := NewDecoder(file)
		a, ok := DecodeAgentStep(d, s.Node, KeyPath(s.Path, "agent"))
		if err := d.Err(); err != nil || !ok {
			t.Errorf("%s: agent step at %s: ok=%v, errors:\n%v", file, s.Pos, ok, err)
		}
		out = append(out, a)
	}
	return out
}

func TestSpecAgentExamplesDecode(t *testing.T) {
	setAgentEnv(t)
	files, err := filepath.Glob("testdata/agent_*.yaml")
	if err != nil || len(files) < 9 {
		t.Fatalf("agent examples: %v %v", files, err)
	}
	for _, f := range files {
		cfg, err := Load(f)
		if err != nil {
			t.Errorf("%s:\n%v", f, err)
			continue
		}
		if len(cfg.Agents) == 0 && len(agentSteps(t, f, cfg)) == 0 {
			t.Errorf("%s: no agent decoded", f)
		}
	}
}

func TestSpecAgentExamplesContent(t *testing.T) {
	setAgentEnv(t)
	load := func(name string) *Config {
		t.Helper()
		cfg, err := Load("testdata/" + name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return cfg
	}

	a := load("agent_spec_mcps.yaml").Agents[0]
	if a.ID != "assistant" || a.Type != "react" || a.Trigger != "http-server://0.0.0.0:8080/chat" ||
		a.Model.Provider != "openai" || a.Model.Model != "gpt-4o" || a.SystemPrompt != "You are a helpful assistant." ||
		a.Path != "agents[0]" || a.Pos.String() != "testdata/agent_spec_mcps.yaml:3:5" {
		t.Errorf("assistant = %+v", a)
	}

	tool := load("agent_spec_auth_bearer.yaml").Agents[0].Tools[0]
	if tool.Name != "secure-tools" || tool.Type != "mcp" || tool.MCPServer == nil ||
		tool.MCPServer.URL != "http://mcp.internal:3100" || tool.MCPServer.Transport != "http" ||
		!reflect.DeepEqual(tool.Auth, map[string]any{"type": "bearer", "token": "value-of-MCP_TOKEN"}) ||
		tool.AuthPos.Line != 11 || tool.Path != "agents[0].tools[0]" {
		t.Errorf("bearer tool = %+v, server %+v", tool, tool.MCPServer)
	}
	tool = load("agent_spec_auth_oauth2.yaml").Agents[0].Tools[0]
	if tool.Type != "mcp" || !reflect.DeepEqual(tool.Auth["scopes"], []any{"tools:read"}) {
		t.Errorf("oauth2 tool = %+v", tool)
	}

	tool = load("agent_spec_stdio_db.yaml").Agents[0].Tools[0]
	if s := tool.MCPServer; s == nil || s.Command != "/usr/local/bin/db-mcp-server" || s.Transport != "stdio" ||
		!reflect.DeepEqual(s.Args, []string{"--dsn", "value-of-DATABASE_URL"}) || tool.Description != "Database query tools" {
		t.Errorf("stdio tool = %+v, server %+v", tool, tool.MCPServer)
	}

	m := load("agent_spec_gateway.yaml").Agents[0].Model
	if m.APIKey != "sk-vk-xxxxx" || m.BaseURL != "http://localhost:7080/ai/openai" || m.Model != "gpt-4o-mini" {
		t.Errorf("gateway model = %+v", m)
	}

	cfg := load("agent_spec_tool_step.yaml")
	steps := agentSteps(t, "testdata/agent_spec_tool_step.yaml", cfg)
	if len(steps) != 1 || steps[0].Model.Provider != "openai" || steps[0].Ref != "" ||
		!strings.HasPrefix(steps[0].SystemPrompt, "You are a translator.") || steps[0].Path != "tools[1].steps[0].agent" {
		t.Errorf("translate agent step = %+v", steps)
	}
}

func TestAgentAllKeys(t *testing.T) {
	cfg, err := Load("testdata/agent_full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) != 2 {
		t.Fatalf("agents = %d", len(cfg.Agents))
	}
	a := cfg.Agents[0]
	temp := 0.2
	no := false
	want := AgentConfig{
		ID: "support", Description: "Answers customer questions", Type: "react",
		Trigger: "http-server://0.0.0.0:8080/support", TriggerRaw: "http-server://0.0.0.0:8080/support",
		Model: ModelConfig{Provider: "anthropic", Model: "claude-sonnet-4-20250514", APIKey: "sk-test",
			BaseURL: "https://gateway.example.com/anthropic", Temperature: &temp, MaxTokens: 1024,
			Headers: map[string]string{"X-Team": "support"}},
		SystemPrompt: "You help customers.",
		Tools: []AgentToolConfig{
			{Name: "lookup-order"},
			{Name: "helper", Type: "agent", Description: "asks the helper"},
			{Name: "fs", Type: "mcp", MCPServer: &AgentMCPServerConfig{Transport: "stdio", Command: "fs-mcp",
				Args: []string{"--root", "/data"}, Env: map[string]string{"LOG": "debug"}, Timeout: 10 * time.Second},
				Include: []string{"read_*", "list_?"}, Exclude: []string{"[!a-z]*"}},
			{Name: "remote", Type: "mcp", MCPServer: &AgentMCPServerConfig{URL: "https://mcp.example.com/mcp", Transport: "sse"}},
		},
		MaxIterations: 8, Timeout: 2 * time.Minute, ToolTimeout: 30 * time.Second,
		ParallelToolCalls: &no, MaxToolCallsPerTurn: 8, MaxParallelToolCalls: 2, MaxToolBytes: 256 << 10, Stream: true,
		Memory: AgentMemoryConfig{Window: 20, MaxSessions: 100},
		Path:   "agents[0]",
	}
	// Positions and nodes are checked elsewhere; compare the content.
	got := a
	got.Pos, got.Node, got.TriggerPos = Pos{}, nil, Pos{}
	got.Model.Node, got.Model.Pos = nil, Pos{}
	got.Tools = nil
	for _, tl := range a.Tools {
		if tl.Node == nil || !tl.Pos.IsValid() || !strings.HasPrefix(tl.Path, "agents[0].tools[") {
			t.Errorf("tool %q: node %v pos %v path %q", tl.Name, tl.Node, tl.Pos, tl.Path)
		}
		tl.Node, tl.Pos, tl.Path = nil, Pos{}, ""
		if tl.MCPServer != nil {
			s := *tl.MCPServer
			s.Pos = Pos{}
			tl.MCPServer = &s
		}
		got.Tools = append(got.Tools, tl)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if a.Tools[2].MCPServer.Pos.String() != "testdata/agent_full.yaml:26:11" {
		t.Errorf("mcp_server pos %v", a.Tools[2].MCPServer.Pos)
	}
	if h := cfg.Agents[1]; h.Type != "react" || h.ParallelToolCalls != nil {
		t.Errorf("defaults: type %q parallel %v", h.Type, h.ParallelToolCalls)
	}
}

func TestAgentErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"provider typo", `
agents:
  - id: a
    model: {provider: opnai, model: gpt-4o}
`, []string{`a.yaml:4:23: agents[0].model.provider: unknown model provider "opnai" (did you mean "openai"?)`}},
		{"missing model name", `
agents:
  - id: a
    model:
      provider: openai
`, []string{`a.yaml:5:7: agents[0].model: the model is missing required key "model"`}},
		{"tool bounds", `
agents:
  - id: a
    model: {provider: openai, model: m}
    max_tool_calls_per_turn: 0
    max_parallel_tool_calls: -1
    max_tool_bytes: 0
`, []string{
			`a.yaml:5:30: agents[0].max_tool_calls_per_turn: max_tool_calls_per_turn must be at least 1, not 0`,
			`a.yaml:6:30: agents[0].max_parallel_tool_calls: max_parallel_tool_calls must be at least 1, not -1`,
			`a.yaml:7:21: agents[0].max_tool_bytes: "0" is not a positive size (write a number of bytes or a size such as 64MiB or 128MB)`}},
		{"missing id", `
agents:
  - model: {provider: openai, model: m}
`, []string{`a.yaml:3:5: agents[0]: an agent is missing required key "id"`}},
		{"bad base_url", `
agents:
  - id: a
    model: {provider: openai, model: m, base_url: "localhost:7080/ai"}
`, []string{`a.yaml:4:51: agents[0].model.base_url: base_url "localhost:7080/ai" is not an http:// or https:// URL (for example https://api.example.com/v1)`}},
		{"bad mcp url", `
agents:
  - id: a
    tools:
      - name: t
        mcp_server: {url: "ftp://x/mcp"}
`, []string{`a.yaml:6:27: agents[0].tools[0].mcp_server.url: url "ftp://x/mcp" is not an http:// or https:// URL (for example https://api.example.com/v1)`}},
		{"stdio without command", `
agents:
  - id: a
    tools:
      - name: t
        type: mcp
        mcp_server:
          transport: stdio
`, []string{
			`a.yaml:8:11: agents[0].tools[0].mcp_server: mcp_server needs url (a running server, http or sse) or command (a program to start, stdio)`,
			`a.yaml:8:22: agents[0].tools[0].mcp_server.transport: transport stdio needs command (add command: (the program to start) and args:, or use transport http with url)`,
		}},
		{"url and command", `
agents:
  - id: a
    tools:
      - name: t
        mcp_server: {url: "https://x/mcp", command: x}
`, []string{`a.yaml:6:53: agents[0].tools[0].mcp_server.command: mcp_server takes url or command, not both (url reaches a running server (http, sse); command starts one (stdio))`}},
		{"auth without mcp", `
agents:
  - id: a
    tools:
      - name: lookup
        type: workflow
        auth: {type: bearer, token: x}
`, []string{`a.yaml:7:15: agents[0].tools[0].auth: auth is only for tools of type mcp (this tool has type workflow; remove auth or set type: mcp)`}},
		{"mcp without server", `
agents:
  - id: a
    tools:
      - {name: t, type: mcp}
`, []string{`a.yaml:5:25: agents[0].tools[0]: a tool of type mcp needs mcp_server (add mcp_server: {url: https://…} or mcp_server: {command: …, args: […]})`}},
		{"negative max_iterations", `
agents:
  - id: a
    max_iterations: -3
`, []string{`a.yaml:4:21: agents[0].max_iterations: max_iterations must be at least 1, not -3`}},
		{"bad duration", `
agents:
  - id: a
    tool_timeout: soon
`, []string{`a.yaml:4:19: agents[0].tool_timeout: want a duration, not "soon" (use a Go duration such as 500ms, 30s, 5m or 1h)`}},
		{"unknown key", `
agents:
  - id: a
    system_promt: hi
`, []string{`a.yaml:4:5: agents[0]: unknown key "system_promt" in an agent (did you mean "system_prompt"?)`}},
		{"unknown tool key", `
agents:
  - id: a
    tools:
      - {name: t, mcp_server: {url: "http://x"}, exclud: [a]}
`, []string{`a.yaml:5:50: agents[0].tools[0]: unknown key "exclud" in an agent tool (did you mean "exclude"?)`}},
		{"bad include pattern", `
agents:
  - id: a
    tools:
      - name: t
        mcp_server: {url: "http://x"}
        include: [ok, "read_[a-"]
`, []string{`a.yaml:7:23: agents[0].tools[0].include[1]: include pattern "read_[a-" is malformed: syntax error in pattern (patterns use path.Match syntax: * (any run of characters), ? (one character), [a-z] (a class); close every [ and escape \ with \)`}},
		{"duplicate id with a workflow", `
workflows:
  - id: dup
    trigger: direct://dup
agents:
  - id: dup
`, []string{`a.yaml:6:5: duplicate id "dup": already used by the workflow at a.yaml:3:5 (ids of workflows, tools, agents and pipelines must be unique)`}},
		{"wrong type", `
agents:
  - id: a
    type: reakt
`, []string{`a.yaml:4:11: agents[0].type: unknown agent type "reakt" (did you mean "react"?)`}},
		{"temperature out of range", `
agents:
  - id: a
    model: {provider: anthropic, model: m, temperature: 2.5}
`, []string{`a.yaml:4:57: agents[0].model.temperature: temperature must be at most 2, not 2.5`}},
		{"memory window zero", `
agents:
  - id: a
    memory: {window: 0}
`, []string{`a.yaml:4:22: agents[0].memory.window: window must be at least 1, not 0`}},
		{"non-scalar where scalar expected", `
agents:
  - id: [a]
    model: {provider: {x: 1}, model: m}
`, []string{
			`a.yaml:3:9: agents[0].id: want a string, not a list`,
			`a.yaml:4:23: agents[0].model.provider: want a string, not a mapping`,
		}},
		{"args with url", `
agents:
  - id: a
    tools:
      - {name: t, mcp_server: {url: "http://x", args: [a]}}
`, []string{`a.yaml:5:55: agents[0].tools[0].mcp_server.args: args is only for a server started with command (stdio)`}},
		{"not a number, one error", `
agents:
  - id: a
    model: {provider: openai, model: m, max_tokens: many}
`, []string{`a.yaml:4:53: agents[0].model.max_tokens: want an integer, not "many"`}},
		{"agent not a mapping", `
agents:
  - just-a-name
`, []string{`a.yaml:3:5: agents[0]: an agent must be a mapping (key: value), not "just-a-name"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("a.yaml", []byte(tc.src))
			if err == nil {
				t.Fatal("want errors")
			}
			var got []string
			for _, e := range err.(Errors).Sorted() {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// stepNode parses src and returns the value node of its single key.
func stepNode(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0].Content[1]
}

func TestDecodeAgentStep(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      AgentConfig
		errs      []string
		usable    bool // an agent despite the errors
	}{
		{name: "reference", src: "agent: support\n", want: AgentConfig{Ref: "support"}},
		{name: "ref mapping", src: "agent: {ref: support}\n", want: AgentConfig{Ref: "support"}},
		{name: "inline with output", src: "agent:\n  model: {provider: openai, model: gpt-4o}\n  output:\n    answer: {type: string, required: true}\n",
			want: AgentConfig{Type: "react", Model: ModelConfig{Provider: "openai", Model: "gpt-4o"},
				Output: []FieldConfig{{Name: "answer", Type: "string", Required: true}}}},
		{name: "ref with more", src: "agent: {ref: support, system_prompt: hi}\n",
			errs: []string{`s.yaml:1:38: steps[0].agent.system_prompt: system_prompt cannot be set with ref: the step runs the agents: entry "support" as declared (set it on the agents: entry, or drop ref and define the agent here)`}},
		{name: "inline without model", src: "agent: {system_prompt: hi}\n",
			errs: []string{`s.yaml:1:8: steps[0].agent: an inline agent needs model: {provider: …, model: …} (or name an agents: entry: agent: ID)`}},
		{name: "empty", src: "agent:\n",
			errs: []string{`s.yaml:1:7: steps[0].agent: an agent step needs the id of an agents: entry or an inline agent (write agent: ID, or agent: {model: {provider: openai, model: gpt-4o}, system_prompt: …})`}},
		{name: "id and trigger are not step keys", src: "agent: {id: x, model: {provider: openai, model: m}}\n",
			errs:   []string{`s.yaml:1:9: steps[0].agent: unknown key "id" in an agent step (known keys: description, max_iterations, max_parallel_tool_calls, max_tool_bytes, max_tool_calls_per_turn, memory, model, output, parallel_tool_calls, ref, stream, system_prompt, timeout, tool_timeout, tools, type)`},
			usable: true},
		{name: "list", src: "agent: [a]\n",
			errs: []string{`s.yaml:1:8: steps[0].agent: want a string, not a list`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder("s.yaml")
			a, ok := DecodeAgentStep(d, stepNode(t, tc.src), "steps[0].agent")
			var got []string
			for _, e := range d.Errors().Sorted() {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.errs) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.errs, "\n"))
			}
			if ok != (len(tc.errs) == 0 || tc.usable) {
				t.Errorf("ok = %v", ok)
			}
			if len(tc.errs) > 0 {
				return
			}
			if a.Path != "steps[0].agent" || a.Node == nil || !a.Pos.IsValid() {
				t.Errorf("path %q node %v pos %v", a.Path, a.Node, a.Pos)
			}
			a.Path, a.Node, a.Pos = "", nil, Pos{}
			a.Model.Node, a.Model.Pos = nil, Pos{}
			for i := range a.Output {
				a.Output[i].Pos = Pos{}
			}
			if !reflect.DeepEqual(a, tc.want) {
				t.Errorf("got  %+v\nwant %+v", a, tc.want)
			}
		})
	}
}

func TestHostileAgentsDoNotPanic(t *testing.T) {
	var b strings.Builder
	b.WriteString("agents:\n  - id: big\n    tools:\n")
	for range 20000 {
		b.WriteString("      - {name: x, mcp_server: {url: 'http://x', args: [[[]]]}, include: [[a]], auth: [1]}\n")
	}
	deep := "agents:\n  - id: deep\n    model: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"
	anchors := "x: &x {id: a, tools: [*x]}\nagents: [*x, *x]\n"
	for _, src := range []string{b.String(), deep, anchors, "agents: {a: b}\n", "agents: [[[]]]\n", "agents:\n  - id: a\n    tools: {x: y}\n"} {
		cfg, err := LoadBytes("h.yaml", []byte(src))
		if cfg == nil || err == nil {
			t.Errorf("want a config and errors for %.40q", src)
		}
	}
}

func TestAgentSchemaDescribesAgents(t *testing.T) {
	file, err := DescribeFile()
	if err != nil {
		t.Fatal(err)
	}
	agents := file.Key("agents")
	if agents == nil || agents.Type != TypeList || agents.Items == nil {
		t.Fatalf("agents: %+v", agents)
	}
	item := agents.Items
	for _, k := range AgentShape().Keys {
		if item.Key(k.Name) == nil {
			t.Errorf("the file's schema has no agents[].%s", k.Name)
		}
	}
	if m := item.Key("model"); m == nil || m.Key("provider") == nil || !reflect.DeepEqual(m.Key("provider").Enum, ModelProviders) {
		t.Errorf("model: %+v", m)
	}
	step := AgentStepShape()
	if step.Key("output") == nil || step.Key("id") != nil || step.Key("trigger") != nil || step.Short != "ref" {
		t.Errorf("step shape keys %v", step.KeyNames())
	}
	out := step.Key("output")
	if out.Type != TypeMap || out.Values == nil || len(out.Values.AnyOf) != 2 {
		t.Errorf("output shape %+v", out)
	}
	if strings.Contains(settingDocs["the configuration.agents"], "not available") {
		t.Error("agents are described as unavailable")
	}
}

func TestShapeBounds(t *testing.T) {
	sh := &Shape{Type: TypeObject, Keys: []Key{
		{Name: "n", Shape: Shape{Type: TypeInt, Min: Bound(1), Max: Bound(10)}},
		{Name: "f", Shape: Shape{Type: TypeNumber, Min: Bound(0.5)}},
	}}
	for src, want := range map[string]string{
		"{n: 5, f: 0.5}": "",
		"{n: 0}":         "b.yaml:1:8: x.n: n must be at least 1, not 0",
		"{n: 11}":        "b.yaml:1:8: x.n: n must be at most 10, not 11",
		"{f: 0.25}":      "b.yaml:1:8: x.f: f must be at least 0.5, not 0.25",
		"{n: ~}":         "",
	} {
		d := NewDecoder("b.yaml")
		d.Decode(stepNode(t, "x: "+src), "x", "x", sh)
		got := ""
		if err := d.Err(); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", src, got, want)
		}
	}
	b, err := FileSchema(SchemaOptions{Steps: []StepSchema{{Name: "b", Shape: sh}}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			Step struct {
				Properties map[string]struct {
					Properties map[string]map[string]any
				}
			}
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	n := doc.Defs.Step.Properties["b"].Properties["n"]
	if n["minimum"] != 1.0 || n["maximum"] != 10.0 || n["$ref"] != "#/$defs/integer" {
		t.Errorf("the schema of n: %v", n)
	}
}

// agentFileSchema is the JSON Schema of the file with the agent step declared, and
// every other step kind of the examples free.
func agentFileSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	step := AgentStepShape()
	b, err := FileSchema(SchemaOptions{Steps: []StepSchema{{Name: "agent", Shape: &step}, {Name: "transform"}, {Name: "log"}}})
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func yamlInstance(t *testing.T, src []byte) any {
	t.Helper()
	var doc any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		t.Fatal(err)
	}
	return inst
}

// The JSON Schema editors check the file with agrees with the decoder on agents:
// the spec's examples pass, mistakes the decoder reports are refused.
func TestAgentSchemaAgreesWithDecoder(t *testing.T) {
	rs := agentFileSchema(t)
	files, _ := filepath.Glob("testdata/agent_*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(yamlInstance(t, data)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", f, err)
		}
	}
	for _, bad := range []string{
		"agents: [{id: a, model: {provider: opnai, model: m}}]",
		"agents: [{id: a, model: {provider: openai}}]",
		"agents: [{id: a, system_promt: hi}]",
		"agents: [{id: a, max_iterations: 0}]",
		"agents: [{id: a, model: {provider: openai, model: m, temperature: 3}}]",
		"agents: [{id: a, tools: [{name: t, mcp_server: {url: 'http://x', transport: grpc}}]}]",
		"agents: [{id: a, tools: [{name: t, mcp_server: {url: 'http://x'}, auth: {type: basic}}]}]",
		"agents: [{id: a, tool_timeout: soon}]",
		"tools: [{id: t, description: d, steps: [{agent: {id: x}}]}]",
		"tools: [{id: t, description: d, steps: [{agent: [a]}]}]",
	} {
		if err := rs.Validate(yamlInstance(t, []byte(bad))); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
