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
	servers := cfg.MCPServers()
	for i, want := range []struct {
		set, on bool
	}{{true, false}, {false, true}, {true, true}, {true, false}} {
		s := servers[i]
		if (s.FastToolCalls != nil) != want.set || s.FastToolCallsOn() != want.on {
			t.Errorf("%s: fast_tool_calls read as set=%v on=%v, want set=%v on=%v", s.Path, s.FastToolCalls != nil, s.FastToolCallsOn(), want.set, want.on)
		}
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

// Go code written for the former field keeps working: DisableFastToolCalls counts
// while FastToolCalls is not set, and FastToolCalls wins when it is.
func TestDisableFastToolCallsStillHonoured(t *testing.T) {
	off, on := false, true
	for _, c := range []struct {
		s    MCPServerConfig
		want bool
	}{
		{MCPServerConfig{}, true},
		{MCPServerConfig{DisableFastToolCalls: true}, false},
		{MCPServerConfig{FastToolCalls: &off}, false},
		{MCPServerConfig{FastToolCalls: &on, DisableFastToolCalls: true}, true},
	} {
		if got := c.s.FastToolCallsOn(); got != c.want {
			t.Errorf("%+v: FastToolCallsOn() = %v, want %v", c.s, got, c.want)
		}
	}
}
