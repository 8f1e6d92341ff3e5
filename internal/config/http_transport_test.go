package config

import (
	"strings"
	"testing"
)

func TestHTTPTransportKey(t *testing.T) {
	cfg, errs := load(t, `
helix:
  mcp:
    servers:
      - enabled: true
        http_transport: sdk
mcps:
  - id: m
    http_transport: helix
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if got := cfg.Helix.MCP.Servers[0].HTTPTransport; got != "sdk" {
		t.Errorf("helix.mcp.servers[0].http_transport = %q", got)
	}
	if got := cfg.MCPs[0].HTTPTransport; got != "helix" {
		t.Errorf("mcps[0].http_transport = %q", got)
	}
	_, errs = load(t, `
mcps:
  - id: m
    http_transport: sdkk
`)
	if errs == nil || !strings.Contains(errs.Error(), `helix.yaml:4:21: mcps[0].http_transport: unknown http_transport "sdkk" (did you mean "sdk"?)`) {
		t.Fatalf("errors: %v", errs)
	}
}
