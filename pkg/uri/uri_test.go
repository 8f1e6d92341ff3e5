package uri

import (
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/exchange"
)

func TestParse(t *testing.T) {
	cases := []struct {
		raw, scheme, host, path, norm string
	}{
		{"direct://greet", "direct", "greet", "", "direct://greet"},
		{"http-server://0.0.0.0:8080/research", "http-server", "0.0.0.0:8080", "/research", "http-server://0.0.0.0:8080/research"},
		{"mcp:///usr/local/bin/mcp-fs/read_file?transport=stdio", "mcp", "", "/usr/local/bin/mcp-fs/read_file", "mcp:///usr/local/bin/mcp-fs/read_file?transport=stdio"},
		{"MCP://h:1/t?b=2&a=1", "mcp", "h:1", "/t", "mcp://h:1/t?a=1&b=2"},
		{"file:///?fileName=x&operation=read", "file", "", "/", "file:///?fileName=x&operation=read"},
	}
	for _, c := range cases {
		u, err := Parse(c.raw)
		if err != nil {
			t.Fatalf("%s: %v", c.raw, err)
		}
		if u.Scheme != c.scheme || u.Host != c.host || u.Path != c.path || u.Normalized() != c.norm {
			t.Errorf("%s: got %q %q %q %q", c.raw, u.Scheme, u.Host, u.Path, u.Normalized())
		}
	}
	for _, bad := range []string{"", "nocolon", "://x", "bad scheme://x", "x://h?%zz"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestOptions(t *testing.T) {
	u, _ := Parse("x://h?timeout=2s&ms=150&flag=true&bad=maybe")
	if d, _ := u.Duration("timeout", 0); d != 2*time.Second {
		t.Error(d)
	}
	if d, _ := u.Duration("ms", 0); d != 150*time.Millisecond {
		t.Error(d)
	}
	if b, _ := u.Bool("flag", false); !b {
		t.Error("flag")
	}
	if _, err := u.Bool("bad", false); err == nil {
		t.Error("bad bool accepted")
	}
}

func TestExpand(t *testing.T) {
	t.Setenv("HELIX_TEST_TOKEN", "s3cret")
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"userId": "u1", "n": map[string]any{"x": 2.5}, "list": []any{"a", "b"}})
	ex.In().SetHeader("X-Intent", "search")
	ex.SetVariable("accountId", "acc-9")
	cases := map[string]string{
		"http://api/users/${body.userId}": "http://api/users/u1",
		"${payload.n.x}":                  "2.5",
		"${body.list.1}":                  "b",
		"${body.missing}":                 "",
		"intent=${header.X-Intent}":       "intent=search",
		"Bearer ${env:HELIX_TEST_TOKEN}":  "Bearer s3cret",
		"${variable.accountId}":           "acc-9",
		"no placeholders":                 "no placeholders",
		"${body}":                         `{"list":["a","b"],"n":{"x":2.5},"userId":"u1"}`,
	}
	for in, want := range cases {
		got, err := Expand(in, ex)
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"${env:HELIX_SURELY_UNSET_VAR}", "${oops", "${nonsense.x}"} {
		if _, err := Expand(bad, ex); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
	// JSON text bodies are walked too.
	ex.In().SetBody(`{"a":{"b":"c"}}`)
	if got, _ := Expand("${body.a.b}", ex); got != "c" {
		t.Errorf("json text body: %q", got)
	}
}
