package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

// reloadApp is the configuration of the handover tests: a tool answering
// version on an MCP server with a random port; extra is appended to the
// workflows.
func reloadApp(t *testing.T, version, extra string) *app.App {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(fmt.Sprintf(`
helix:
  shutdown_timeout: 20s
  mcp:
    servers:
      - id: api
        enabled: true
        addr: 127.0.0.1:0
workflows:
  - id: version
    trigger: direct://version
    steps:
      - set-body: %s
%s`, version, extra)))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func versionOf(t *testing.T, a *app.App) string {
	t.Helper()
	got, isErr := callText(t, mcpSession(t, a, "api"), "version", nil)
	if isErr {
		t.Fatalf("version: tool error %s", got)
	}
	return got
}

func retire(t *testing.T, a *app.App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Retire(ctx); err != nil {
		t.Fatalf("retire: %v", err)
	}
}

// The successor gets the predecessor's random ports (MCP and management), its
// own management server answers /metrics (two apps' collectors in one process),
// and it serves once the predecessor retired.
func TestHandoverKeepsRandomPortsAndServes(t *testing.T) {
	t.Parallel()
	old := reloadApp(t, "v1", "")
	if err := old.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := versionOf(t, old); got != "v1" {
		t.Fatalf("old: %q", got)
	}
	next := startedSuccessor(t, old, reloadApp(t, "v2", ""))
	if o, n := old.MCPServers().Addr("api").String(), next.MCPServers().Addr("api").String(); o != n {
		t.Fatalf("the successor's MCP server is on %s, the predecessor's on %s", n, o)
	}
	if o, n := old.ManagementAddr(), next.ManagementAddr(); o == "" || o != n {
		t.Fatalf("the successor's management server is on %q, the predecessor's on %q", n, o)
	}
	retire(t, old)
	if got := versionOf(t, next); got != "v2" {
		t.Fatalf("after the handover: %q, want v2", got)
	}
	resp, err := http.Get("http://" + next.ManagementAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "helix_build_info") {
		t.Fatalf("/metrics of the successor: %d %.200s", resp.StatusCode, body)
	}
}

// startedSuccessor hands old over to next and stops next when the test ends.
func startedSuccessor(t *testing.T, old, next *app.App) *app.App {
	t.Helper()
	if err := old.Handover(context.Background(), next); err != nil {
		t.Fatalf("handover: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = next.Stop(ctx)
	})
	return next
}

// A successor that cannot start (a port it cannot bind) is rolled back: the
// predecessor serves on, its sockets untouched, and can be handed over later.
func TestHandoverThatFailsToStartLeavesThePredecessorServing(t *testing.T) {
	t.Parallel()
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	old := startBuilt(t, reloadApp(t, "v1", ""))
	failing := reloadApp(t, "v2", fmt.Sprintf(`  - id: other
    trigger: http-server://%s/other
    steps:
      - set-body: x
`, blocker.Addr()))
	err = old.Handover(context.Background(), failing)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("handover to a successor that cannot bind: %v", err)
	}
	if got := versionOf(t, old); got != "v1" {
		t.Fatalf("after the failed handover: %q, want v1 from the predecessor", got)
	}
	next := startedSuccessor(t, old, reloadApp(t, "v3", ""))
	retire(t, old)
	if got := versionOf(t, next); got != "v3" {
		t.Fatalf("after the second handover: %q, want v3", got)
	}
}

// A stdio MCP server's stream cannot be handed over: the reload is refused and
// the running app is not touched.
func TestHandoverRefusedForStdio(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  mcp:
    servers:
      - id: desktop
        enabled: true
        transport: stdio
workflows:
  - id: version
    trigger: direct://version
    steps:
      - set-body: v1
`))
	if err != nil {
		t.Fatal(err)
	}
	opts := quiet
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	opts.Stdin, opts.Stdout = stdinR, io.Discard
	old, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, old)
	next := reloadApp(t, "v2", "")
	if err := old.Handover(context.Background(), next); !errors.Is(err, app.ErrReloadRefused) || !strings.Contains(err.Error(), "stdio") {
		t.Fatalf("handover of a stdio server: %v, want ErrReloadRefused naming stdio", err)
	}
	// Nor to a configuration that would serve stdio, from an mcp-server:// trigger.
	running := startBuilt(t, reloadApp(t, "v1", ""))
	toStdio := reloadApp(t, "v2", "  - id: desktop\n    trigger: mcp-server://local?transport=stdio\n    steps:\n      - set-body: x\n")
	if err := running.Handover(context.Background(), toStdio); !errors.Is(err, app.ErrReloadRefused) {
		t.Fatalf("handover to an mcp-server:// stdio trigger: %v, want ErrReloadRefused", err)
	}
	if got := versionOf(t, running); got != "v1" {
		t.Fatalf("after the refused handover: %q", got)
	}
}

// With helix.cluster.leader, the replaced app keeps the leadership until it
// stops: its successor's singleton timer does not fire beside it, and takes
// over once it retired (docs/reload.md, "Triggers that are not listeners").
func TestHandoverHandsTheLeadershipOverWithoutOverlap(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresURL(t)
	name, dir := testtools.UniqueName("reload"), t.TempDir()
	build := func(replica string) *app.App {
		cfg, err := config.LoadBytes("helix.yaml", []byte(clusterYAML(url, name, dir, replica)))
		if err != nil {
			t.Fatal(err)
		}
		a, err := app.Build(cfg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	old := build("old")
	if err := old.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the old app leads and ticks", func() bool { return old.IsLeader() && ticks(t, dir, "old") >= 3 })
	next := startedSuccessor(t, old, build("new"))
	time.Sleep(300 * time.Millisecond) // an observation window (three timer periods) for what must not happen
	if next.IsLeader() || ticks(t, dir, "new") != 0 {
		t.Fatalf("the successor leads (%v) or fired (%d ticks) while the old app runs", next.IsLeader(), ticks(t, dir, "new"))
	}
	retire(t, old)
	oldTicks := ticks(t, dir, "old")
	testtools.Eventually(t, "the successor takes over", func() bool { return next.IsLeader() && ticks(t, dir, "new") >= 1 })
	if got := ticks(t, dir, "old"); got != oldTicks {
		t.Fatalf("the old app fired after it retired: %d ticks, then %d", oldTicks, got)
	}
}
