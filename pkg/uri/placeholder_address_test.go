package uri

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/exchange"
)

// TestExpandURIKeepsValuesInTheirComponent: a value from the exchange cannot add a
// '/', ':', '@', '#', '?' or a dot-segment to the host or path of a target URI: it is
// percent-encoded, or refused.
func TestExpandURIKeepsValuesInTheirComponent(t *testing.T) {
	for _, tc := range []struct {
		template, value, want, refused string
	}{
		{"http://api/users/${body.x}", "../admin", "http://api/users/..%2Fadmin", ""},
		{"http://api/users/${body.x}", "a/b", "http://api/users/a%2Fb", ""},
		{"http://api/users/${body.x}", "evil.com:80@", "http://api/users/evil.com%3A80%40", ""},
		{"http://api/users/${body.x}", "x#y", "http://api/users/x%23y", ""},
		{"http://api/users/${body.x}?q=1", "x?y=1", "http://api/users/x%3Fy=1?q=1", ""},
		{"http://api/users/${body.x}", "%2e%2e", "http://api/users/%252e%252e", ""},
		{"http://api/users/${body.x}", "..", "", "path segment"},
		{"http://api/users/${body.x}/orders", ".", "", "path segment"},
		{"http://api/users/x${body.x}", ".", "http://api/users/x.", ""},
		{"http://${body.x}/users", "evil.com:80@", "", "for the host"},
		{"http://${body.x}/users", "a/b", "", "for the host"},
		{"http://${body.x}:8080/users", "api.internal", "http://api.internal:8080/users", ""},
		{"mcp://h:1/mcp/${body.x}", "../../bin/sh", "mcp://h:1/mcp/..%2F..%2Fbin%2Fsh", ""},
		{"mcp:///usr/bin/server/${body.x}?transport=stdio", "x/../../../bin/sh", "mcp:///usr/bin/server/x%2F..%2F..%2F..%2Fbin%2Fsh?transport=stdio", ""},
		{"file:///srv/${body.x}", "../etc", "file:///srv/..%2Fetc", ""},
		{"file:///srv/${body.x}", "..", "", "path segment"},
	} {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"x": tc.value})
		got, err := ExpandURI(tc.template, ex)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s with %q: got %q, %v; want a refusal about %q", tc.template, tc.value, got, err, tc.refused)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s with %q: got %q, %v; want %q", tc.template, tc.value, got, err, tc.want)
		}
	}
}

func TestExpandURIFileDirectoryIsPath(t *testing.T) {
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"x": "/tmp/a b"})
	if got, err := ExpandURI("file://${body.x}?operation=read", ex); err != nil || got != "file://%2Ftmp%2Fa%20b?operation=read" {
		t.Fatalf("got %q, %v", got, err)
	}
}
