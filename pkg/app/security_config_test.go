package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

// Bad security settings are configuration errors with the server's position;
// every problem of an entry is reported at once.
func TestSecurityConfigErrors(t *testing.T) {
	t.Setenv("HELIX_EMPTY_KEY", "")
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"empty key from env", `
mcps:
  - id: s
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    api_keys: ["${env:HELIX_EMPTY_KEY}"]
`, []string{"helix.yaml:", "mcps[0]", "api_keys[0] is empty"}},
		{"bad proxy and origin", `
mcps:
  - id: s
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    trusted_proxies: ["not-an-ip"]
    cors_origins: ["localhost:3000"]
`, []string{"mcps[0]", "not-an-ip", "localhost:3000"}},
		{"oauth without audience", `
helix:
  mcp:
    servers:
      - enabled: true
        name: secured
        addr: "127.0.0.1:0"
        auth:
          issuer: https://issuer.test
          jwks_url: https://issuer.test/certs
`, []string{"helix.mcp.servers[0]", "auth.audience is required"}},
		{"bad resource_url", `
mcps:
  - id: s
    addr: "127.0.0.1:0"
    auth:
      issuer: https://issuer.test
      jwks_url: https://issuer.test/certs
      resource_url: mcp.test/mcp
`, []string{"auth.resource_url", "mcp.test/mcp"}},
		{"max_body_bytes below -1", `
mcps:
  - id: s
    addr: "127.0.0.1:0"
    max_body_bytes: -2
`, []string{"max_body_bytes", "-1 for no limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadYAML(fourWorkflows + tc.yaml)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func loadYAML(yaml string) (*app.App, error) {
	cfg, err := config.LoadBytes("helix.yaml", []byte(yaml))
	if err != nil {
		return nil, err
	}
	return app.Build(cfg, quiet)
}

// On stdio only the tool lists apply; the HTTP settings draw one warning naming
// them, and the tool lists still filter.
func TestSecurityOnStdioWarns(t *testing.T) {
	t.Parallel()
	a, err := loadYAML(fourWorkflows + `
mcps:
  - id: local
    transport: stdio
    api_keys: [k]
    rate_limit: 10
    blocked_tools: [admin-tool]
  - id: local-tools-only
    transport: stdio
    allowed_tools: [code-assistant]
`)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, w := range a.Config().Warnings {
		if strings.Contains(w.Error(), "stdio") {
			warned = append(warned, w.Error())
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "mcps[0]: api_keys, rate_limit: not applied to a stdio server") {
		t.Errorf("warnings: %q", warned)
	}
	servers := map[string][]string{}
	for _, s := range a.Manifest().MCPServers {
		servers[s.ID] = s.Tools
		if len(s.Endpoints) != 0 || s.Addr != "" {
			t.Errorf("stdio server %s has endpoints %v addr %q", s.ID, s.Endpoints, s.Addr)
		}
	}
	if got := fmt.Sprint(servers["local"]); got != "[code_assistant math_agent summarizer]" {
		t.Errorf("local lists %s", got)
	}
	if got := fmt.Sprint(servers["local-tools-only"]); got != "[code_assistant]" {
		t.Errorf("local-tools-only lists %s", got)
	}
}

// Building (helix validate, helix mcp list) opens no listener: the management
// address stays free until Start.
func TestManagementOnlyOnStart(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  management:
    addr: "`+addr+`"
`+fourWorkflows))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("building bound the management address: %v", err)
	}
	ln.Close()
	if a.ManagementAddr() != "" {
		t.Errorf("ManagementAddr before Start: %q", a.ManagementAddr())
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.ManagementAddr() != addr {
		t.Errorf("ManagementAddr %q, want %q", a.ManagementAddr(), addr)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if a.ManagementAddr() != "" {
		t.Errorf("ManagementAddr after Stop: %q", a.ManagementAddr())
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the management address is still bound after Stop: %v", err)
	}
	ln.Close()
}

// A taken management port moves the server to a free port of the same host (Helix
// runs on) unless required.
func TestManagementAddressTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	yaml := func(required bool) string {
		return fmt.Sprintf(`
helix:
  management:
    addr: "%s"
    required: %v
`, ln.Addr(), required) + fourWorkflows
	}

	logs := &testtools.SyncBuffer{}
	cfg, err := config.LoadBytes("helix.yaml", []byte(yaml(false)))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, app.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("optional management on a taken address: %v", err)
	}
	if got := a.ManagementAddr(); got == "" || got == ln.Addr().String() || !strings.Contains(logs.String(), "url=http://"+got) {
		t.Errorf("addr %q, logs:\n%s", a.ManagementAddr(), logs)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	// quiet's ManagementAddr override would pick a free port; build without it.
	cfg, _ = config.LoadBytes("helix.yaml", []byte(yaml(true)))
	a, err = app.Build(cfg, app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		_ = a.Stop(context.Background())
		t.Fatalf("required management on a taken address: %v", err)
	}
}

func TestManagementAddrError(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  management:
    addr: "9999"
`))
	if err != nil {
		t.Fatal(err)
	}
	err = app.Validate(cfg)
	if err == nil || !strings.Contains(err.Error(), "helix.management.addr") {
		t.Fatalf("error %v", err)
	}
}
