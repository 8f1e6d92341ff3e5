package app_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// A stdio MCP server is what Claude Desktop and other AI clients launch, often
// beside a running Helix: it binds no management port unless the file (or the
// embedding program) asks for one.
func TestStdioServerBindsNoManagementPortUnlessConfigured(t *testing.T) {
	t.Parallel()
	const workflow = `
workflows:
  - id: version
    trigger: direct://version
    steps:
      - set-body: v1
`
	const declared = `
helix:
  mcp:
    servers:
      - id: desktop
        enabled: true
        transport: stdio
`
	const trigger = `
workflows:
  - id: desktop
    trigger: mcp-server://local?transport=stdio
    steps:
      - set-body: x
`
	for _, c := range []struct {
		name, yaml, optsAddr string
		wantManagement       bool
	}{
		{"declared stdio server", declared + workflow, "", false},
		{"mcp-server:// stdio trigger", trigger, "", false},
		{"stdio server with management.addr", declared + "  management:\n    addr: 127.0.0.1:0\n" + workflow, "", true},
		{"stdio server with management.enabled", declared + "  management:\n    enabled: true\n" + workflow, "", true},
		{"stdio server, address from the embedding program", declared + workflow, "127.0.0.1:0", true},
		{"no stdio server", workflow, "127.0.0.1:0", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.LoadBytes("helix.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			stdinR, stdinW := io.Pipe()
			defer stdinW.Close()
			opts := app.Options{Logger: slog.New(slog.DiscardHandler), ManagementAddr: c.optsAddr,
				Stdin: stdinR, Stdout: io.Discard}
			a, err := app.Build(cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			startBuilt(t, a)
			if got := a.ManagementAddr() != ""; got != c.wantManagement {
				t.Errorf("management server running: %v (addr %q), want %v", got, a.ManagementAddr(), c.wantManagement)
			}
		})
	}
}
