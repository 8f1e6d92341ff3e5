package config

import (
	"strings"
	"testing"
)

// A tool override's task: says whether the server runs the tool as an MCP
// task; a value other than optional, required or forbidden is an error at its
// position.
func TestToolOverrideTask(t *testing.T) {
	cfg, errs := load(t, `
mcps:
  - id: m
    tools:
      a: {task: required}
      b: {task: forbidden}
      c: {description: plain}
`)
	if errs != nil {
		t.Fatal(errs)
	}
	tools := cfg.MCPServers()[0].Tools
	if tools["a"].Task != "required" || tools["b"].Task != "forbidden" || tools["c"].Task != "" {
		t.Fatalf("tasks %+v", tools)
	}
	_, errs = load(t, `
mcps:
  - id: m
    tools:
      a: {task: always}
`)
	if errs == nil || !strings.Contains(errs.Error(), `helix.yaml:5:17: mcps[0].tools.a.task: task is "always"; it is one of optional, required, forbidden`) {
		t.Fatalf("an unknown task value: %v", errs)
	}
}
