package server

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/uri"
)

// The fast tools/call path can be switched off on mcp-server:// triggers too, as with
// fast_tool_calls: false in YAML.
func TestServerURIFastToolCalls(t *testing.T) {
	t.Parallel()
	for raw, wantDisabled := range map[string]bool{
		"mcp-server://127.0.0.1:0":                     false,
		"mcp-server://127.0.0.1:0?fastToolCalls=true":  false,
		"mcp-server://127.0.0.1:0?fastToolCalls=false": true,
	} {
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		o, err := OptionsFromURI(u)
		if err != nil || o.FastToolCallsOn() == wantDisabled {
			t.Errorf("%s: on=%v err=%v, want disabled=%v", raw, o.FastToolCallsOn(), err, wantDisabled)
		}
	}
	u, _ := uri.Parse("mcp-server://127.0.0.1:0?fastToolCalls=maybe")
	if _, err := OptionsFromURI(u); err == nil || !strings.Contains(err.Error(), "fastToolCalls") {
		t.Errorf("bad value: %v", err)
	}
}
