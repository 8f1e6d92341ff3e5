package server

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/uri"
)

func TestSessionLimitURIOptions(t *testing.T) {
	t.Parallel()
	u, _ := uri.Parse("mcp-server://127.0.0.1:0?maxSessions=20&maxSessionsPerPrincipal=-1")
	o, err := OptionsFromURI(u)
	if err != nil || o.MaxSessions != 20 || o.MaxSessionsPerPrincipal != -1 {
		t.Fatalf("%+v %v", o, err)
	}
	for raw, want := range map[string]string{
		"mcp-server://127.0.0.1:0?maxSessions=lots":           `option maxSessions="lots" is not a whole number`,
		"mcp-server://127.0.0.1:0?maxSessionsPerPrincipal=-2": "-1 for no limit",
		"mcp-server://127.0.0.1:0?maxSesions=5":               `unknown option "maxSesions" (did you mean "maxSessions"?)`,
		"mcp-server://127.0.0.1:0?sessionIdleTimeout=forever": `option sessionIdleTimeout="forever" is not a duration`,
	} {
		u, _ := uri.Parse(raw)
		if _, err := OptionsFromURI(u); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	var c Component
	o = Options{}
	if err := c.normalize(&o); err != nil || o.MaxSessions != DefaultMaxSessions || o.MaxSessionsPerPrincipal != DefaultMaxSessionsPerPrincipal {
		t.Fatalf("defaults: %d %d %v", o.MaxSessions, o.MaxSessionsPerPrincipal, err)
	}
}
