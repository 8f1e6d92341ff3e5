package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileText holds what a server could use to take over a terminal: clear screen,
// an OSC 8 hyperlink (ended by ST and by BEL), a C1 CSI, BEL, backspace, carriage
// return, DEL and an OSC 52 clipboard write.
const hostileText = "ok\x1b[2J\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x07 \u009b31m red\a\b\r\x7f\x1b]52;c;ZXZpbA==\x07\tend\n"

// hostileServer is a Streamable HTTP server whose tool "evil" has the hostile text
// in its description and result, and whose tool "fail" returns it as an error.
func hostileServer(t *testing.T) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "hostile", Version: "1"}, nil)
	for _, name := range []string{"evil", "fail"} {
		s.AddTool(&sdk.Tool{Name: name, Description: "desc " + hostileText, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{IsError: name == "fail", Content: []sdk.Content{&sdk.TextContent{Text: hostileText}}}, nil
			})
	}
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// assertTerminalSafe fails when out holds a control character other than \n and \t.
func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
			t.Errorf("%s holds control character %U: %q", what, r, out)
			return
		}
	}
}

// TestMCPClientOutputIsTerminalSafe: helix mcp call and inspect print what the server
// sent (tool names, descriptions, results, errors) without terminal control
// sequences, keeping the visible text.
func TestMCPClientOutputIsTerminalSafe(t *testing.T) {
	t.Parallel()
	url := hostileServer(t)
	for _, args := range [][]string{
		{"mcp", "call", url, "evil"},
		{"mcp", "call", url, "fail"},
		{"mcp", "call", url, "--list"},
		{"mcp", "inspect", url},
		{"mcp", "inspect", "--schemas", url},
	} {
		code, stdout, stderr := execute(t, args...)
		name := strings.Join(args, " ")
		assertTerminalSafe(t, name+": stdout", stdout)
		assertTerminalSafe(t, name+": stderr", stderr)
		if !strings.Contains(stdout+stderr, "ok") || !strings.Contains(stdout+stderr, "link") {
			t.Errorf("%s: exit %d, the visible text is lost: stdout %q stderr %q", name, code, stdout, stderr)
		}
	}
	if got := terminalSafe(hostileText); got != "oklink  red\tend\n" {
		t.Errorf("terminalSafe = %q", got)
	}
}
