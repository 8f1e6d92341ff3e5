package app_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// validate and start warn about a management address or an MCP server that
// listens beyond loopback without api_keys or OAuth.
func TestOpenListenersWarn(t *testing.T) {
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  management:
    addr: "0.0.0.0:9999"
  mcp:
    servers:
      - enabled: true
        name: default-addr
      - enabled: true
        name: all-v4
        addr: "0.0.0.0:3000"
      - enabled: true
        name: keyed
        addr: "0.0.0.0:3001"
        api_keys: [k]
      - enabled: false
        name: disabled
        addr: "0.0.0.0:3002"
mcps:
  - id: empty-host
    addr: ":3003"
  - id: all-v6
    addr: "[::]:3004"
  - id: public-ip
    addr: "192.0.2.10:3005"
  - id: loopback
    addr: "127.0.0.1:3006"
  - id: loopback-v6
    addr: "[::1]:3007"
  - id: localhost
    addr: "localhost:3008"
  - id: stdio
    transport: stdio
  - id: proxied-only
    addr: "0.0.0.0:3009"
    trusted_proxies: ["10.0.0.1"]
  - id: oauth
    addr: "0.0.0.0:3010"
    auth:
      issuer: https://issuer.example
      audience: https://mcp.example/mcp
      jwks_url: https://issuer.example/jwks
workflows:
  - id: bridge
    trigger:
      uri: mcp-server://0.0.0.0:3011?transport=http&name=bridge
    steps: []
  - id: local-bridge
    trigger:
      uri: mcp-server://127.0.0.1:3012?transport=http&name=local
    steps: []
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Build(cfg, app.Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, w := range cfg.Warnings {
		if strings.Contains(w.Msg, "beyond loopback") {
			open = append(open, w.Error())
		}
	}
	all := strings.Join(open, "\n")
	for _, want := range []string{"helix.management.addr", "all-v4", "empty-host", "all-v6", "public-ip", "proxied-only", "bridge"} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning for %s; warnings:\n%s", want, all)
		}
	}
	for _, quiet := range []string{"default-addr", "keyed", "disabled", `"loopback"`, "loopback-v6", "localhost", "stdio", "oauth", "local-bridge"} {
		if strings.Contains(all, quiet) {
			t.Errorf("warning for %s:\n%s", quiet, all)
		}
	}
	if len(open) != 7 {
		t.Errorf("%d warnings, want 7:\n%s", len(open), all)
	}
}
