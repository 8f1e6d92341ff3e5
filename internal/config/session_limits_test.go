package config

import (
	"strings"
	"testing"
	"time"
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

func TestAdmissionKey(t *testing.T) {
	cfg, errs := load(t, `
helix:
  mcp:
    servers:
      - enabled: true
        admission: {max_running: auto}
mcps:
  - id: m
    admission:
      max_running: 32
      queue: -1
      queue_timeout: 20ms
  - id: n
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if a := cfg.Helix.MCP.Servers[0].Admission; a == nil || a.MaxRunning != 0 || a.Queue != 0 || a.QueueTimeout != 0 || a.Pos.Line != 6 {
		t.Errorf("auto: %+v", a)
	}
	if a := cfg.MCPs[0].Admission; a == nil || a.MaxRunning != 32 || a.Queue != -1 || a.QueueTimeout != 20*time.Millisecond {
		t.Errorf("mcps[0]: %+v", a)
	}
	if a := cfg.MCPs[1].Admission; a != nil {
		t.Errorf("unset: %+v", a)
	}
	_, errs = load(t, `
mcps:
  - id: m
    admission:
      max_running: lots
      queue: -2
      queue_timeout: -1s
      wait: 1s
  - id: n
    admission: {max_running: 0}
  - id: o
    admission: {queue: 3}
`)
	for _, want := range []string{
		`helix.yaml:5:20: mcps[0].admission.max_running: admission max_running must be a number of requests (at least 1) or auto, not "lots"`,
		"helix.yaml:6:14: mcps[0].admission.queue: admission queue must be a number of requests, 0 for the default (max_running) or -1 for none",
		`helix.yaml:7:22: mcps[0].admission.queue_timeout: want a duration, not "-1s"`,
		`helix.yaml:8:7: mcps[0].admission: unknown key "wait" in admission`,
		`helix.yaml:10:30: mcps[1].admission.max_running: admission max_running must be a number of requests (at least 1) or auto, not "0"`,
		`mcps[2].admission: admission is missing required key "max_running"`,
	} {
		if errs == nil || !strings.Contains(errs.Error(), want) {
			t.Errorf("errors %v\nlack %s", errs, want)
		}
	}
}
