package config

import (
	"strings"
	"testing"
	"time"
)

// The trigger URI is kept as written beside the resolved one, so that it can be
// shown without the secrets ${env:…} brings in.
func TestTriggerURIKeptAsWritten(t *testing.T) {
	t.Setenv("HOOK_SECRET", "s3cret")
	cfg, errs := load(t, `
workflows:
  - id: hook
    trigger: http-server://127.0.0.1:8080/hook?token=${env:HOOK_SECRET}
    steps: []
  - id: long
    trigger:
      uri: "direct://long?x=${env:HOOK_SECRET}"
    steps: []
  - id: plain
    from: direct://plain
    steps: []
`)
	if errs != nil {
		t.Fatal(errs)
	}
	want := []struct{ from, raw string }{
		{"http-server://127.0.0.1:8080/hook?token=s3cret", "http-server://127.0.0.1:8080/hook?token=${env:HOOK_SECRET}"},
		{"direct://long?x=s3cret", "direct://long?x=${env:HOOK_SECRET}"},
		{"direct://plain", "direct://plain"},
	}
	for i, w := range want {
		if got := cfg.Workflows[i]; got.From != w.from || got.FromRaw != w.raw {
			t.Errorf("workflow %s: From %q FromRaw %q, want %q and %q", got.ID, got.From, got.FromRaw, w.from, w.raw)
		}
	}
}

func TestAuthFailureKeys(t *testing.T) {
	cfg, errs := load(t, `
helix:
  mcp:
    servers:
      - enabled: true
        api_keys: [k]
        auth_failure_limit: 5
        auth_failure_window: 30s
mcps:
  - id: m
    api_keys: [k]
    auth_failure_limit: -1
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if s := cfg.Helix.MCP.Servers[0].Security; s.AuthFailureLimit != 5 || s.AuthFailureWindow != 30*time.Second {
		t.Errorf("helix.mcp.servers[0]: %+v", s)
	}
	if s := cfg.MCPs[0].Security; s.AuthFailureLimit != -1 {
		t.Errorf("mcps[0]: %+v", s)
	}
	_, errs = load(t, `
mcps:
  - id: m
    auth_failure_limit: -5
    auth_failure_window: -1s
`)
	if errs == nil || !strings.Contains(errs.Error(), "auth_failure_limit") || !strings.Contains(errs.Error(), "auth_failure_window") {
		t.Fatalf("errors: %v", errs)
	}
}
