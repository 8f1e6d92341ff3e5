package client_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// stdioUpstreamEnv, when set to a directory, makes this test binary a stdio MCP server
// with one tool, "slow", that writes started and cancelled files there: the upstream
// of TestRelayCancellationStdioUpstream, which the relay starts as a subprocess.
const stdioUpstreamEnv = "HELIX_TEST_STDIO_UPSTREAM"

func TestMain(m *testing.M) {
	if dir := os.Getenv(stdioUpstreamEnv); dir != "" {
		serveSlowStdioUpstream(dir)
		return
	}
	os.Exit(m.Run())
}

func serveSlowStdioUpstream(dir string) {
	mark := func(name string) func() {
		return func() { _ = os.WriteFile(filepath.Join(dir, name), nil, 0o644) }
	}
	up := slowUpstream("stdio-upstream", mark("started"), mark("cancelled"))
	_ = up.Run(context.Background(), &sdk.StdioTransport{})
}

// TestRelayCancellationStdioUpstream: the relay's mcp:// call goes to a stdio
// subprocess; the TypeScript SDK's client aborts its call of the relay (with and
// without a progress token, staying connected), and the subprocess's handler must be
// cancelled.
func TestRelayCancellationStdioUpstream(t *testing.T) {
	t.Parallel()
	node := testtools.Node(t)
	sdkDir := testtools.NPMPackageDir(t, "@modelcontextprotocol/sdk")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "cancel.mjs")
	esm := "file://" + filepath.ToSlash(filepath.Join(sdkDir, "dist", "esm"))
	if err := os.WriteFile(script, []byte(fmt.Sprintf(tsCancelScript, esm, esm, esm, esm)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, withProgress := range []bool{false, true} {
		t.Run(fmt.Sprintf("progressToken=%v", withProgress), func(t *testing.T) {
			marks := t.TempDir()
			relay := startYAMLApp(t, fmt.Sprintf(`
helix:
  mcp:
    servers:
      - { enabled: true, transport: http, addr: "127.0.0.1:0", name: relay, workflows: [relay] }
workflows:
  - id: relay
    description: "Relay to a slow stdio upstream"
    trigger: { uri: direct://relay }
    steps:
      - target: "mcp://%s/slow?transport=stdio&env=%s=%s&timeout=0"
`, self, stdioUpstreamEnv, marks))
			endpoint := "http://" + serverAddr(t, relay, "relay") + "/mcp"
			ctx, stop := context.WithTimeout(context.Background(), 90*time.Second)
			defer stop()
			flag := "0"
			if withProgress {
				flag = "1"
			}
			cmd := exec.CommandContext(ctx, node, script, flag, endpoint)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out := &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			waitFor := func(what string, ok func() bool) {
				t.Helper()
				deadline := time.Now().Add(testtools.StartupBound)
				for !ok() {
					if time.Now().After(deadline) {
						t.Fatalf("%s: not in time; client output:\n%s", what, out.String())
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			exists := func(name string) func() bool {
				return func() bool { _, err := os.Stat(filepath.Join(marks, name)); return err == nil }
			}
			waitFor("the upstream call did not start", exists("started"))
			if withProgress {
				waitFor("no progress reached the client", func() bool { return strings.Contains(out.String(), "progress") })
			}
			_, _ = io.WriteString(stdin, "abort\n")
			waitFor("the stdio upstream's call was not cancelled", exists("cancelled"))
			waitFor("the client's call was not aborted", func() bool { return strings.Contains(out.String(), "ABORTED") })
			_ = stdin.Close()
		})
	}
}
