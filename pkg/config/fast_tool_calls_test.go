package config

import (
	"strings"
	"testing"
)

func TestFastToolCallsKey(t *testing.T) {
	cfg, errs := load(t, `
helix:
  mcp:
    servers:
      - enabled: true
        fast_tool_calls: false
      - enabled: true
mcps:
  - id: m
    fast_tool_calls: true
  - id: n
    fast_tool_calls: false
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if !cfg.Helix.MCP.Servers[0].DisableFastToolCalls || cfg.Helix.MCP.Servers[1].DisableFastToolCalls {
		t.Errorf("helix.mcp.servers: fast_tool_calls false/omitted read as disable=%v/%v",
			cfg.Helix.MCP.Servers[0].DisableFastToolCalls, cfg.Helix.MCP.Servers[1].DisableFastToolCalls)
	}
	if cfg.MCPs[0].DisableFastToolCalls || !cfg.MCPs[1].DisableFastToolCalls {
		t.Errorf("mcps: fast_tool_calls true/false read as disable=%v/%v", cfg.MCPs[0].DisableFastToolCalls, cfg.MCPs[1].DisableFastToolCalls)
	}
	_, errs = load(t, `
mcps:
  - id: m
    fast_tool_calls: sometimes
`)
	if errs == nil || !strings.Contains(errs.Error(), "mcps[0].fast_tool_calls") {
		t.Fatalf("errors: %v", errs)
	}
}
