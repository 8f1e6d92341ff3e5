package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, src string) (*Config, Errors) {
	t.Helper()
	cfg, err := LoadBytes("helix.yaml", []byte(src))
	if err == nil {
		return cfg, nil
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want config.Errors, got %T: %v", err, err)
	}
	return cfg, errs
}

func TestLoadModel(t *testing.T) {
	t.Setenv("HELIX_TEST_ADDR", "127.0.0.1:3000")
	cfg, errs := load(t, `
helix:
  name: demo
  log_level: debug
  management: {addr: "127.0.0.1:9999", enabled: false, required: true}
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "${env:HELIX_TEST_ADDR}"
        name: "my-tools"
        version: 1.0
        workflows: [greet]
        stateless: true
        session_idle_timeout: 30m
        api_keys: [k1]
        rate_limit: 60
        max_body_bytes: 2097152
        tools:
          greet:
            description: "Say hello"
            input_schema: '{"type":"object"}'
workflows:
  - id: greet
    description: "Greet a person"
    trigger:
      uri: direct://greet
    error_handler:
      dead_letter_channel: log://errors
      default: {maximum_redeliveries: 3, redelivery_delay: 10ms, backoff_multiplier: 2}
    steps:
      - transform:
          starlang: |
            "Hello, " ++ payload["name"]
  - id: short
    trigger: direct://short
    steps: []
tools:
  - id: search
    description: "Search"
    input:
      query: { type: string, description: "Search query", required: true }
      limit: { type: integer, default: 10 }
    output:
      results: { type: array, items: {type: string} }
mcps:
  - id: all
    addr: 0.0.0.0:3100
  - id: none
    expose: []
    cors_origins: ["http://localhost:3000"]
`)
	if errs != nil {
		t.Fatal(errs)
	}
	s := cfg.Helix.MCP.Servers[0]
	if cfg.Helix.Name != "demo" || cfg.Helix.LogLevel != "debug" || *cfg.Helix.Management.Enabled || !cfg.Helix.Management.Required {
		t.Errorf("helix settings: %+v", cfg.Helix)
	}
	if s.Addr != "127.0.0.1:3000" || s.Version != "1.0" || !s.Stateless || s.SessionIdleTimeout != 30*time.Minute ||
		s.RateLimit != 60 || s.MaxBodyBytes != 2097152 || s.APIKeys[0] != "k1" || s.Tools["greet"].Description != "Say hello" {
		t.Errorf("server: %+v", s)
	}
	w := cfg.Workflows[0]
	if w.From != "direct://greet" || w.FromPos.Line != 27 || len(w.Steps) != 1 || w.Steps[0].Kind != "transform" {
		t.Errorf("workflow: %+v", w)
	}
	if w.Steps[0].Pos.String() != "helix.yaml:32:9" || w.Steps[0].Path != "workflows[0].steps[0]" {
		t.Errorf("step pos %s path %s", w.Steps[0].Pos, w.Steps[0].Path)
	}
	eh := w.ErrorHandler
	if eh.DeadLetterChannel != "log://errors" || eh.Default.MaximumRedeliveries != 3 || eh.Default.RedeliveryDelay != 10*time.Millisecond || eh.Default.BackoffMultiplier != 2 {
		t.Errorf("error handler: %+v %+v", eh, eh.Default)
	}
	if cfg.Workflows[1].From != "direct://short" {
		t.Errorf("string trigger: %q", cfg.Workflows[1].From)
	}
	if got := cfg.Tools[0].Input[1]; got.Name != "limit" || got.Default != 10 {
		t.Errorf("field: %+v", got)
	}
	if cfg.MCPs[0].Expose != nil || cfg.MCPs[1].Expose == nil || len(cfg.MCPs[1].Expose) != 0 {
		t.Errorf("expose: %+v", cfg.MCPs)
	}
}

func TestBlockScalarPosition(t *testing.T) {
	cfg, errs := load(t, "workflows:\n  - id: a\n    trigger: direct://a\n    steps:\n      - transform:\n          starlang: |\n\n            x = 1\n            x\n")
	if errs != nil {
		t.Fatal(errs)
	}
	n := cfg.Workflows[0].Steps[0].Node.Content[1]
	// The script's first line (an empty one) is line 7; its content column is 13.
	if n.Line != 7 || n.Column != 13 {
		t.Errorf("block scalar at %d:%d, want 7:13", n.Line, n.Column)
	}
}

func TestErrorsAreAllReportedWithPositions(t *testing.T) {
	_, errs := load(t, `workflows:
  - id: a
    desciption: x
    trigger: {uri: direct://a, url: x}
    steps:
      - log
      - {a: 1, b: 2}
  - id: a
    trigger: direct://a2
  - description: no id
tools:
  - id: t
    description: ""
    input: {q: {type: strng}}
  - id: a
    description: d
    input: {}
    output: {n: {type: integer, default: "x"}}
mcps:
  - id: m
    transport: htp
    session_idle_timeout: soon
helix:
  unknown: 1
`)
	want := []string{
		`helix.yaml:3:5: workflows[0]: unknown key "desciption" in a workflow (did you mean "description"?)`,
		`helix.yaml:4:32: workflows[0].trigger: unknown key "url" in trigger (did you mean "uri"?)`,
		`helix.yaml:6:9: workflows[0].steps[0]: a step must be a mapping with exactly one key`,
		`helix.yaml:7:9: workflows[0].steps[1]: a step must be a mapping`,
		`helix.yaml:8:5: duplicate id "a": already used by the workflow at helix.yaml:2:5`,
		`helix.yaml:10:5: workflows[2]: a workflow is missing required key "id"`,
		`helix.yaml:12:5: tools[0]: a tool is missing required key "output"`,
		`helix.yaml:13:18: tools[0].description: a tool's description must not be empty`,
		`helix.yaml:14:23: tools[0].input.q.type: unknown field type "strng" (did you mean "string"?)`,
		`helix.yaml:15:5: duplicate id "a": already used by the workflow at helix.yaml:2:5`,
		`helix.yaml:18:42: tools[1].output.n.default: default x is not of type integer`,
		`helix.yaml:21:16: mcps[0].transport: unknown MCP transport "htp" (did you mean "http"?)`,
		`helix.yaml:22:27: mcps[0].session_idle_timeout: want a duration`,
		`helix.yaml:24:3: helix: unknown key "unknown" in helix`,
	}
	got := strings.Split(errs.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), errs)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("HELIX_TEST_TOKEN", "s3cret")
	cfg, errs := load(t, `workflows:
  - id: a
    trigger: direct://a
    steps:
      - set-header: {name: Authorization, constant: "Bearer ${env:HELIX_TEST_TOKEN} ${header.X}"}
      - transform:
          starlang: '"${env:NOT_RESOLVED_IN_SCRIPTS}"'
      - log: "${env:HELIX_TEST_MISSING_VAR}"
`)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "helix.yaml:8:15: environment variable HELIX_TEST_MISSING_VAR is not set") {
		t.Fatalf("errors: %v", errs)
	}
	constant := cfg.Workflows[0].Steps[0].Node.Content[3].Value
	if constant != "Bearer s3cret ${header.X}" {
		t.Errorf("constant = %q", constant)
	}
	script := cfg.Workflows[0].Steps[1].Node.Content[1].Value
	if script != `"${env:NOT_RESOLVED_IN_SCRIPTS}"` {
		t.Errorf("script = %q", script)
	}
}

func TestYAMLSyntaxError(t *testing.T) {
	// Spec §7.2 as printed: parameters: indented under a scalar target.
	_, errs := load(t, `workflows:
  - id: lookup-order
    trigger:
      uri: direct://lookup-order
    steps:
      - target: postgres://db:5432/orders?operation=query
          parameters:
            query: "SELECT 1"
`)
	if len(errs) != 1 || errs[0].Pos.Line != 7 || !strings.Contains(errs[0].Msg, "invalid YAML") || errs[0].Hint == "" {
		t.Fatalf("errors: %v", errs)
	}
}

func TestWarningsAndMerge(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	b := filepath.Join(dir, "b.yaml")
	os.WriteFile(a, []byte("helix: {name: first, mcp: {servers: [{name: s1}]}}\nworkflows:\n  - id: lonely\n"), 0o600)
	os.WriteFile(b, []byte("helix: {log_level: warn, mcp: {servers: [{name: s2}]}}\nworkflows:\n  - id: other\n    trigger: direct://o\n---\ntools: []\n"), 0o600)
	cfg, err := Load(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Helix.Name != "first" || cfg.Helix.LogLevel != "warn" || len(cfg.Helix.MCP.Servers) != 2 || len(cfg.Workflows) != 2 {
		t.Errorf("merge: %+v", cfg)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), `a.yaml:3:5: workflows[0]: workflow "lonely" has no trigger`) {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestInputSchema(t *testing.T) {
	cfg, errs := load(t, `tools:
  - id: search
    description: "Search knowledge base"
    input:
      query: { type: string, description: "Search query", required: true }
      limit: { type: integer, description: "Max results", default: 10 }
      mode: { type: string, enum: [fast, deep] }
      filter: { type: object, properties: { tag: {type: string, required: true} } }
    output:
      results: { type: array, description: "Matching documents", items: integer }
      total: integer
`)
	if errs != nil {
		t.Fatal(errs)
	}
	in := string(cfg.Tools[0].InputSchema())
	wantIn := `{"type":"object","properties":{"query":{"type":"string","description":"Search query"},"limit":{"type":"integer","description":"Max results","default":10},"mode":{"type":"string","enum":["fast","deep"]},"filter":{"type":"object","properties":{"tag":{"type":"string"}},"required":["tag"]}},"required":["query"]}`
	if in != wantIn {
		t.Errorf("input schema:\n got %s\nwant %s", in, wantIn)
	}
	out := string(cfg.Tools[0].OutputSchema())
	wantOut := `{"type":"object","properties":{"results":{"type":"array","description":"Matching documents","items":{"type":"integer"}},"total":{"type":"integer"}}}`
	if out != wantOut {
		t.Errorf("output schema:\n got %s\nwant %s", out, wantOut)
	}
}

func TestSuggest(t *testing.T) {
	kinds := []string{"transform", "process", "set-body", "set-header", "log", "target"}
	for word, want := range map[string]string{"tranform": "transform", "set-bdy": "set-body", "lg": "log", "targte": "target", "lgo": "log", "xyz": "", "choice": ""} {
		if got := Suggest(word, kinds); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

func TestAliasBombIsBounded(t *testing.T) {
	src := "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\nworkflows: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
	_, err := LoadBytes("bomb.yaml", []byte(src))
	if err == nil {
		t.Fatal("want errors")
	}
}

func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("workflows:\n  - id: a\n    trigger: {uri: direct://a}\n    steps:\n      - transform:\n          starlang: |\n            x\n"))
	f.Add([]byte("tools:\n  - id: t\n    description: d\n    input: {a: {type: array, items: {type: object, properties: {b: string}}}}\n    output: {}\n"))
	f.Add([]byte("helix: {mcp: {servers: [{tools: {x: {input_schema: '{'}}}]}}\nmcps: [{id: m, auth: {issuer: i, scopes: {'*': [a]}}}]\n"))
	f.Add([]byte("a: &a {<<: *a}\n"))
	f.Add([]byte("agents: [{id: a, model: {provider: openai, model: m, temperature: 3}, tools: [x, {name: m, mcp_server: {command: c}, include: ['[']}]}]\ntools: [{id: t, description: d, steps: [{agent: {ref: a}}, {agent: b}, {agent: {model: {provider: anthropic, model: m}, output: {x: string}}}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadBytes("fuzz.yaml", data)
		if cfg == nil {
			t.Fatal("LoadBytes must always return a config")
		}
		if err != nil {
			_ = err.Error()
		}
		for _, tl := range cfg.Tools {
			_ = tl.InputSchema()
			_ = tl.OutputSchema()
			for _, s := range tl.Steps {
				if s.Kind == "agent" {
					DecodeAgentStep(NewDecoder("fuzz.yaml"), s.Node, s.Path)
				}
			}
		}
	})
}
