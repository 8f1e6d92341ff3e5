package server

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/uri"
)

func TestSessionLimitURIOptions(t *testing.T) {
	u, _ := uri.Parse("mcp-server://127.0.0.1:0?maxSessions=20&maxSessionsPerPrincipal=-1")
	o, err := OptionsFromURI(u)
	if err != nil || o.MaxSessions != 20 || o.MaxSessionsPerPrincipal != -1 {
		t.Fatalf("%+v %v", o, err)
	}
	for _, raw := range []string{"mcp-server://127.0.0.1:0?maxSessions=lots", "mcp-server://127.0.0.1:0?maxSessionsPerPrincipal=-2"} {
		u, _ := uri.Parse(raw)
		if _, err := OptionsFromURI(u); err == nil || !strings.Contains(err.Error(), "-1 for no limit") {
			t.Errorf("%s: %v", raw, err)
		}
	}
	var c Component
	o = Options{}
	if err := c.normalize(&o); err != nil || o.MaxSessions != DefaultMaxSessions || o.MaxSessionsPerPrincipal != DefaultMaxSessionsPerPrincipal {
		t.Fatalf("defaults: %d %d %v", o.MaxSessions, o.MaxSessionsPerPrincipal, err)
	}
}
