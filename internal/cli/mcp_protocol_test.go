package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMCPProtocolVersionFlag: --protocol-version pins the version the client
// speaks (the server's answer shows it), and an unknown one is bad input.
func TestMCPProtocolVersionFlag(t *testing.T) {
	t.Parallel()
	url := callTestServer(t)
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, "2025-11-25"}, // the newest this go-sdk server speaks
		{[]string{"--protocol-version", "2025-06-18"}, "2025-06-18"},
		{[]string{"--protocol-version", "2025-03-26"}, "2025-03-26"},
	} {
		code, stdout, stderr := execute(t, append([]string{"mcp", "inspect", url, "-o", "json"}, tc.flags...)...)
		if code != ExitOK {
			t.Fatalf("inspect %v: exit %d\n%s", tc.flags, code, stderr)
		}
		var got struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.ProtocolVersion != tc.want {
			t.Errorf("inspect %v: protocol %q (%v), want %s", tc.flags, got.ProtocolVersion, err, tc.want)
		}
	}
	code, stdout, _ := execute(t, "mcp", "call", url, "sum", "a=1", "b=2", "--protocol-version", "2025-11-25")
	if code != ExitOK || stdout != "3\n" {
		t.Errorf("call with a pinned version: exit %d, stdout %q", code, stdout)
	}
	code, _, stderr := execute(t, "mcp", "call", url, "sum", "--protocol-version", "2025-13-01")
	if code != ExitConfig || !strings.Contains(stderr, `protocol version "2025-13-01" is not one the client speaks (use one of 2026-07-28`) {
		t.Errorf("unknown version: exit %d, stderr %q; want bad input naming the versions", code, stderr)
	}
}
