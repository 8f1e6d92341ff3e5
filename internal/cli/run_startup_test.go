package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

// The start-up line counts the tools the MCP servers really serve: after expose,
// allowed_tools and blocked_tools, and a tool two servers serve counted once (not
// the tools: entries of the file).
func TestStartupLineCountsServedTools(t *testing.T) {
	t.Parallel()
	const yaml = `
helix:
  management:
    enabled: false
tools:
  - id: t1
    description: "one"
    input: {}
    output: {}
    steps:
      - set-body: one
  - id: t2
    description: "two"
    input: {}
    output: {}
    steps:
      - set-body: two
  - id: t3
    description: "three, served by nobody"
    input: {}
    output: {}
    steps:
      - set-body: three
workflows:
  - id: w
    trigger: direct://w
    steps:
      - set-body: w
mcps:
  - id: a
    addr: 127.0.0.1:0
    expose: [t1, t2, w]
    blocked_tools: [t2]
  - id: b
    addr: 127.0.0.1:0
    expose: [t1]
`
	file := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testtools.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- ExecuteContext(ctx, []string{"--log-format", "json", "run", file}, strings.NewReader(""), &stdout, &stderr)
	}()
	var started map[string]any
	for deadline := time.Now().Add(testtools.StartupBound); started == nil && time.Now().Before(deadline); {
		select {
		case code := <-done:
			t.Fatalf("helix run ended before it started: exit %d\n%s", code, stderr.String())
		default:
		}
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "helix started" {
				started = rec
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("helix run: exit %d\n%s", code, stderr.String())
	}
	if started == nil {
		t.Fatalf("no start-up line:\n%s", stderr.String())
	}
	// t1 (two servers, counted once) and w: t2 is blocked, t3 exposed by no server.
	if started["tools"] != 2.0 || started["mcp_servers"] != 2.0 {
		t.Errorf("start-up line %v: want tools=2 mcp_servers=2", started)
	}
}
