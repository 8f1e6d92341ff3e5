package mcptools_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/mcptools"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/testtools"
)

// stdioHelperEnv, when set, makes TestStdioHelperServer a stdio MCP server (the
// test binary run as a subprocess) instead of a test.
const stdioHelperEnv = "HELIX_TEST_MCPTOOLS_STDIO_SERVER"

// TestStdioHelperServer is not a test: run as a subprocess by the stdio tests with
// stdioHelperEnv set, it serves testServer's tools over stdin/stdout.
func TestStdioHelperServer(t *testing.T) {
	if os.Getenv(stdioHelperEnv) == "" {
		t.Skip("helper process for the stdio tests")
	}
	_ = testServer().Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0) // nothing of the test framework may reach stdout
}

// childPIDs lists this process's children whose command line ends with lastArg.
func childPIDs(t *testing.T, contains, lastArg string) []int {
	t.Helper()
	out, err := exec.Command("ps", "-o", "pid=,ppid=,args=", "--ppid", strconv.Itoa(syscall.Getpid())).Output()
	if err != nil {
		t.Skipf("ps: %v", err)
	}
	var pids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.Contains(line, contains) || f[len(f)-1] != lastArg {
			continue
		}
		if pid, err := strconv.Atoi(f[0]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, p := range pids {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill -0: %v)", p, err)
		}
	}
}

// TestStdioStartSpawnsAndStopTerminates: Start spawns the server and discovers its
// tools (spec §4.8), Tools and calls use that subprocess, Stop ends it.
func TestStdioStartSpawnsAndStopTerminates(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const run = "-test.run=^TestStdioHelperServer$"
	s, err := mcptools.New(mcptools.Options{Name: "MCP server helper", Conn: mcpclient.Config{
		Transport: mcpclient.TransportStdio, Command: exe, Args: []string{run},
		Env: []string{stdioHelperEnv + "=1"}, Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	if pids := childPIDs(t, exe, run); len(pids) != 0 {
		t.Fatalf("New spawned %v", pids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pids := childPIDs(t, exe, run)
	if len(pids) != 1 {
		t.Fatalf("after Start: %d helper processes (%v), want 1", len(pids), pids)
	}
	tools, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, find(t, tools, "echo"), `{"text":"over stdio"}`); res.IsError || res.Content[0].Text != "echo: over stdio" {
		t.Errorf("result %+v", res)
	}
	if again := childPIDs(t, exe, run); len(again) != 1 || again[0] != pids[0] {
		t.Errorf("helper processes now %v, want still %v", again, pids)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pids)
}

// TestStdioStartFailsForAMissingCommand: discovery at Start reports the server.
func TestStdioStartFailsForAMissingCommand(t *testing.T) {
	s := newServer(t, mcptools.Options{Name: "MCP server ghost", Conn: mcpclient.Config{
		Transport: mcpclient.TransportStdio, Command: "/nonexistent/helix-mcp-server", Args: []string{"--dsn", "postgres://u:pw@h/db"}}})
	err := s.Start(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "MCP server ghost: discover tools:") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "pw@") {
		t.Errorf("err shows the command's arguments: %v", err)
	}
}

// TestStdioServerEverything runs the reference server over stdio.
func TestStdioServerEverything(t *testing.T) {
	node := testtools.Node(t)
	script := testtools.NPMBin(t, "mcp-server-everything")
	s := newServer(t, mcptools.Options{Name: "MCP server everything", Include: []string{"echo", "get-sum"},
		Conn: mcpclient.Config{Transport: mcpclient.TransportStdio, Command: node, Args: []string{script, "stdio"}, Stderr: discard{}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pids := childPIDs(t, script, "stdio")
	if len(pids) != 1 {
		t.Fatalf("%d server-everything processes (%v), want 1", len(pids), pids)
	}
	tools, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools); len(got) != 2 {
		t.Fatalf("tools %v, want echo and get-sum", got)
	}
	res := call(t, find(t, tools, "echo"), `{"message":"hello"}`)
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "hello") {
		t.Errorf("echo: %+v", res)
	}
	res = call(t, find(t, tools, "get-sum"), `{"a":2,"b":3}`)
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "5") {
		t.Errorf("get-sum: %+v", res)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pids)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
