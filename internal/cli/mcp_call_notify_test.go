package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// helix mcp call asks for progress and log messages and shows them on stderr as
// they arrive, one line each; the result alone goes to stdout.
func TestMCPCallShowsProgressAndLogs(t *testing.T) {
	addrs := startYAMLServer(t, "../../examples/mcp-progress.yaml", map[string]string{"MCP_PROGRESS_PORT": "0"})
	addr := addrs["progress-demo"]
	code, stdout, stderr := execute(t, "mcp", "call", addr, "import-rows", `rows=["a","","c"]`)
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if stdout != `{"imported":["A","","C"]}`+"\n" {
		t.Errorf("stdout = %q", stdout)
	}
	want := "info import_rows: importing 3 rows\n" +
		"progress 1/3 row 1\n" +
		"progress 2/3 row 2\n" +
		"warning import_rows: {\"skipped\":1}\n" +
		"progress 3/3 row 3\n" +
		"notice import_rows: imported 3 rows\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}

	// --server-log picks the level; none asks for no log messages.
	code, _, stderr = execute(t, "mcp", "call", "--server-log", "warning", addr, "import-rows", `rows=["a",""]`)
	if code != ExitOK || strings.Contains(stderr, "info ") || !strings.Contains(stderr, "warning import_rows: {\"skipped\":1}\n") {
		t.Errorf("--server-log warning: exit %d stderr:\n%s", code, stderr)
	}
	code, _, stderr = execute(t, "mcp", "call", "--server-log", "none", addr, "import-rows", `rows=["a"]`)
	if code != ExitOK || stderr != "progress 1/1 row 1\n" {
		t.Errorf("--server-log none: exit %d stderr:\n%q", code, stderr)
	}
	code, _, stderr = execute(t, "mcp", "call", "--server-log", "loud", addr, "import-rows")
	if code != ExitConfig || !strings.Contains(stderr, "--server-log") || !strings.Contains(stderr, "debug") {
		t.Errorf("bad --server-log: exit %d stderr %q", code, stderr)
	}
}

// Progress messages and log data are the server's text: terminal control sequences
// are removed before they reach stderr.
func TestMCPCallNotificationsAreTerminalSafe(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "hostile", Version: "1.0.0"}, nil) // the tool added below declares the tools capability
	s.AddTool(&sdk.Tool{Name: "noisy", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "half\x1b[2J\x1b]0;pwned\x07 way"})
			//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
			_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "error", Logger: "n\x1b[31mx", Data: "disk\x1b[1A full"})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	code, stdout, stderr := execute(t, "mcp", "call", srv.URL, "noisy")
	if code != ExitOK || stdout != "ok\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	want := "progress 1 half way\nerror nx: disk full\n"
	if stderr != want {
		t.Errorf("stderr = %q, want %q", stderr, want)
	}
}

// What inspect, read and prompt print of a server's resources and prompts is the
// server's text too: control sequences are removed, and a table cell stays one line.
func TestMCPPrimitivesAreTerminalSafe(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "hostile\x1b]0;title\x07", Version: "1"}, nil)
	s.AddResource(&sdk.Resource{URI: "x://r", Name: "r\x1b[2J", Description: "clears\nthe screen\x1b[H", MIMEType: "text/plain"},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "x://r", Text: "safe\x1b[31m text\u009b2J"}}}, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "p", Description: "bell\x07 prompt"},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi\x1b]52;c;cGF3bmVk\x07 there"}}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"inspect", srv.URL}, []string{"Server: hostile 1", "x://r  r     text/plain  clears …\n", "p       -                       bell prompt\n"}},
		{[]string{"read", srv.URL, "x://r"}, []string{"safe text\n"}},
		{[]string{"prompt", srv.URL, "p"}, []string{"user: hi there\n"}},
	} {
		code, stdout, stderr := execute(t, append([]string{"mcp"}, tc.args...)...)
		if code != ExitOK || strings.ContainsAny(stdout, "\x1b\x07\u009b") {
			t.Errorf("%v: exit %d stdout %q stderr %q", tc.args, code, stdout, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: stdout lacks %q:\n%s", tc.args, w, stdout)
			}
		}
	}
}
