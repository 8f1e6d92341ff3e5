package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestMCPListGolden(t *testing.T) {
	t.Parallel()
	for file, golden := range map[string]string{
		"../../examples/mcp-tools.yaml":  "testdata/mcp-list-tools.golden",
		"../../examples/mcp-server.yaml": "testdata/mcp-list-server.golden",
	} {
		code, stdout, stderr := execute(t, "mcp", "list", file)
		if code != ExitOK || stderr != "" {
			t.Fatalf("%s: exit %d, stderr %s", file, code, stderr)
		}
		if *update {
			if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if stdout != string(want) {
			t.Errorf("%s differs from %s:\n got:\n%s\nwant:\n%s", file, golden, stdout, want)
		}
	}
}

// A server's TOOLS column shows what its clients can list: blocked tools (and tools
// outside allowed_tools) are left out, as in the manifest.
func TestMCPListHidesFilteredTools(t *testing.T) {
	t.Parallel()
	file := t.TempDir() + "/filtered.yaml"
	yaml := `workflows:
  - {id: open, trigger: direct://open, steps: []}
  - {id: secret, trigger: direct://secret, steps: []}
  - {id: both, trigger: direct://both, steps: []}
mcps:
  - id: filtered
    addr: 127.0.0.1:0
    allowed_tools: [open, both]
    blocked_tools: [both]
  - id: everything
    addr: 127.0.0.1:0
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "mcp", "list", file)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var filtered, everything string
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "filtered "):
			filtered = line
		case strings.HasPrefix(line, "everything "):
			everything = line
		}
	}
	if !strings.HasSuffix(filtered, " open") || strings.Contains(filtered, "both") || strings.Contains(filtered, "secret") {
		t.Errorf("filtered server lists %q, want only open", filtered)
	}
	if !strings.Contains(everything, "both") || !strings.Contains(everything, "open") || !strings.Contains(everything, "secret") {
		t.Errorf("unfiltered server lists %q, want all three", everything)
	}
}

func TestMCPListRejectsBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := dir + "/bad.yaml"
	yaml := "workflows:\n  - id: a-b\n    trigger: direct://x\n    steps: []\n  - id: a.b\n    trigger: direct://y\n    steps: []\nmcps:\n  - id: t\n    addr: 127.0.0.1:0\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "mcp", "list", file)
	if code != ExitConfig || stdout != "" || !strings.Contains(stderr, `"a_b"`) || !strings.Contains(stderr, "bad.yaml:5:5") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

// startInspectTarget serves two tools on a loopback port for helix mcp inspect.
func startInspectTarget(t *testing.T) string {
	t.Helper()
	hc := engine.NewContext("inspect-target")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	noop := []engine.Processor{engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil })}
	for _, wf := range []*engine.Workflow{
		{ID: "summarize", Description: "Summarize text into key points", FromURI: "direct://summarize", Processors: noop},
		{ID: "search", Description: "Search knowledge base", FromURI: "direct://search", Processors: noop},
	} {
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(mcpserver.Options{ID: "t", Addr: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = hc.Stop(ctx)
	})
	return comp.Addr("t").String()
}

func TestMCPInspect(t *testing.T) {
	t.Parallel()
	addr := startInspectTarget(t)
	// The go-sdk client's latest protocol: every Helix server serves it, over SSE too.
	table := "Server: helix-mcp 1.0.0 (protocol 2026-07-28)\n\n" +
		"Tools: 2\n\n" +
		"TOOL       DESCRIPTION\n" +
		"----       -----------\n" +
		"search     Search knowledge base\n" +
		"summarize  Summarize text into key points\n" +
		"\nResources: 2\n\n" +
		"URI                NAME       TYPE              DESCRIPTION\n" +
		"---                ----       ----              -----------\n" +
		"helix://routes     routes     application/json  Alias of helix://workflows.\n" +
		"helix://workflows  workflows  application/json  The workflows this server offers as tools: id, trigger URI, description and state (Started/Stopped).\n" +
		"\nResource templates: 0\n" +
		"\nPrompts: 0\n"
	for _, tc := range []struct {
		args     []string
		endpoint string
	}{
		{[]string{addr}, "http://" + addr + "/mcp"}, // host:port: /mcp first, then /
		{[]string{"http://" + addr + "/mcp"}, "http://" + addr + "/mcp"},
		{[]string{"--transport", "sse", addr}, "http://" + addr + "/sse"},
	} {
		code, stdout, stderr := execute(t, append([]string{"mcp", "inspect"}, tc.args...)...)
		want := "MCP Server: " + tc.endpoint + "\n" + table
		if code != ExitOK || stdout != want {
			t.Errorf("inspect %v: exit %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", tc.args, code, stdout, want, stderr)
		}
	}
	code, stdout, _ := execute(t, "mcp", "inspect", "--schemas", addr)
	if code != ExitOK || !strings.Contains(stdout, `"additionalProperties": true`) {
		t.Errorf("--schemas: exit %d\n%s", code, stdout)
	}
}

func TestMCPInspectUnreachable(t *testing.T) {
	t.Parallel()
	// A port that was just free: nothing listens there.
	addr := startInspectTargetAddrThenClose(t)
	code, stdout, stderr := execute(t, "mcp", "inspect", "--timeout", "20s", addr)
	if code != ExitRuntime || stdout != "" || !strings.Contains(stderr, "connect") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, _, stderr = execute(t, "mcp", "inspect", "--transport", "grpc", addr)
	if code != ExitConfig || !strings.Contains(stderr, "grpc") {
		t.Fatalf("bad transport: exit %d stderr %q", code, stderr)
	}
}

func startInspectTargetAddrThenClose(t *testing.T) string {
	t.Helper()
	hc := engine.NewContext("closed")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(mcpserver.Options{ID: "t", Addr: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := comp.Addr("t").String()
	if err := hc.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return addr
}

// helix mcp serve with a stdio server speaks MCP on stdout (nothing else) and exits
// when its stdin closes, as an AI client's subprocess must.
func TestMCPServeStdioExitsOnEOF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := dir + "/stdio.yaml"
	yaml := `
helix:
  mcp:
    servers:
      - enabled: true
        transport: stdio
        name: "my-tools"
workflows:
  - id: greet
    trigger: direct://greet
    steps:
      - transform:
          starlang: |
            "Hello, " ++ payload.get("name", "World") ++ "!"
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr testtools.SyncBuffer
	done := make(chan int, 1)
	go func() {
		code := Execute([]string{"mcp", "serve", file}, inR, outW, &stderr)
		_ = outW.Close()
		done <- code
	}()
	lines := bufio.NewScanner(outR)
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		if !lines.Scan() {
			t.Fatalf("stdout ended: %v", lines.Err())
		}
		if !json.Valid(lines.Bytes()) {
			t.Fatalf("stdout line is not JSON-RPC: %q", lines.Text())
		}
		return lines.Text()
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if l := read(); !strings.Contains(l, `"my-tools"`) {
		t.Fatalf("initialize: %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`)
	if l := read(); !strings.Contains(l, "Hello, Ada!") {
		t.Fatalf("call: %s", l)
	}
	_ = inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
		}
	case <-time.After(testtools.StartupBound):
		t.Fatal("helix mcp serve did not exit after stdin closed")
	}
}
