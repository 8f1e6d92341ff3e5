package client

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// TestStdioToolPlaceholderCannotChangeCommand: a stdio target whose tool segment
// comes from a placeholder runs the executable written in the URI whatever the value;
// an executable from a placeholder is refused.
func TestStdioToolPlaceholderCannotChangeCommand(t *testing.T) {
	t.Parallel()
	const template = "mcp:///usr/bin/mcp-server/${body.tool}?transport=stdio"
	for _, value := range []string{"../../../bin/sh", "x/../../sh", "a/b", "evil?transport=http", "x#y", "%2e%2e%2fsh"} {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"tool": value})
		raw, err := uri.ExpandURI(template, ex)
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		u.Template = template
		cfg, tool, err := ParseURI(u)
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		if cfg.Command != "/usr/bin/mcp-server" || cfg.Transport != TransportStdio || tool != value {
			t.Errorf("%q: command %q transport %q tool %q", value, cfg.Command, cfg.Transport, tool)
		}
	}
	for _, template := range []string{"mcp:///usr/bin/${body.tool}/read?transport=stdio", "mcp://${body.tool}/read?transport=stdio"} {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"tool": "sh"})
		raw, err := uri.ExpandURI(template, ex)
		if err != nil {
			continue // refused while expanding: fine too
		}
		u, _ := uri.Parse(raw)
		u.Template = template
		if _, _, err := ParseURI(u); err == nil || !strings.Contains(err.Error(), "executable") {
			t.Errorf("%s: err = %v, want a refusal naming the executable", template, err)
		}
	}
}
