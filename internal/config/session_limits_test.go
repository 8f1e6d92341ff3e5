package config

import (
	"strings"
	"testing"
)

func TestSessionLimitKeys(t *testing.T) {
	cfg, errs := load(t, `
helix:
  mcp:
    servers:
      - enabled: true
        max_sessions: 50
        max_sessions_per_principal: -1
mcps:
  - id: m
    max_sessions_per_principal: 3
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if got := cfg.Helix.MCP.Servers[0].SessionLimits; got != (SessionLimits{MaxSessions: 50, MaxSessionsPerPrincipal: -1}) {
		t.Errorf("helix.mcp.servers[0]: %+v", got)
	}
	if got := cfg.MCPs[0].SessionLimits; got != (SessionLimits{MaxSessionsPerPrincipal: 3}) {
		t.Errorf("mcps[0]: %+v", got)
	}
	_, errs = load(t, `
mcps:
  - id: m
    max_sessions: -5
    max_sessions_per_principal: many
`)
	for _, want := range []string{
		"helix.yaml:4:19: mcps[0].max_sessions: max_sessions must be a number of sessions, 0 for the default (10000) or -1 for no limit",
		"helix.yaml:5:33: mcps[0].max_sessions_per_principal:",
	} {
		if errs == nil || !strings.Contains(errs.Error(), want) {
			t.Errorf("errors %v\nlack %s", errs, want)
		}
	}
}

func TestMaxConcurrentCallsKey(t *testing.T) {
	cfg, errs := load(t, `
mcps:
  - id: m
    max_concurrent_calls: 8
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if got := cfg.MCPs[0].MaxConcurrentCalls; got != 8 {
		t.Errorf("max_concurrent_calls %d", got)
	}
	_, errs = load(t, `
mcps:
  - id: m
    max_concurrent_calls: -2
`)
	if want := "mcps[0].max_concurrent_calls: max_concurrent_calls must be a number of requests, 0 for the default (64) or -1 for no limit"; errs == nil || !strings.Contains(errs.Error(), want) {
		t.Errorf("errors %v\nlack %s", errs, want)
	}
}
