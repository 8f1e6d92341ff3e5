package uri

import (
	"testing"

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

// ${env:NAME:-default} follows the shell: the default applies when NAME is unset or
// empty; it may itself contain colons.
func TestEnvDefault(t *testing.T) {
	t.Setenv("HELIX_TEST_SET", "9090")
	t.Setenv("HELIX_TEST_EMPTY", "")
	cases := map[string]string{
		"${env:HELIX_TEST_SET:-8080}":                "9090",
		"${env:HELIX_TEST_EMPTY:-8080}":              "8080",
		"${env:HELIX_SURELY_UNSET_VAR:-8080}":        "8080",
		"${env:HELIX_SURELY_UNSET_VAR:-}":            "",
		"${env:HELIX_SURELY_UNSET_VAR:-127.0.0.1:1}": "127.0.0.1:1",
		"x ${env: HELIX_TEST_SET :-1} y":             "x 9090 y",
		"${env:HELIX_TEST_EMPTY}":                    "",
	}
	for in, want := range cases {
		got, err := Expand(in, nil)
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Expand("${env::-x}", nil); err == nil {
		t.Error("an empty variable name is accepted")
	}
}

// Values substituted into a URI's query cannot add or change options: they are
// query-escaped, and a '?' substituted into the address does not start a query.
func TestExpandURIKeepsValuesInTheirOption(t *testing.T) {
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{
		"p":   "/etc/passwd&allowEscape=true",
		"q":   "a+b c%d",
		"dir": "x?fileName=/etc/shadow",
	})
	got, err := ExpandURI("file:///d?operation=read&fileName=${body.p}", ex)
	if err != nil {
		t.Fatal(err)
	}
	u, err := Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if u.Params.Get("fileName") != "/etc/passwd&allowEscape=true" || u.Params.Get("allowEscape") != "" || u.Params.Get("operation") != "read" {
		t.Fatalf("%s parsed to %v", got, u.Params)
	}
	got, _ = ExpandURI("http://api/s?q=${body.q}", ex)
	if u, _ = Parse(got); u.Params.Get("q") != "a+b c%d" {
		t.Fatalf("%s: q = %q", got, u.Params.Get("q"))
	}
	got, _ = ExpandURI("file://${body.dir}?operation=read", ex)
	if u, _ = Parse(got); u.Params.Get("fileName") != "" || u.Params.Get("operation") != "read" {
		t.Fatalf("%s parsed to %v", got, u.Params)
	}
	// Placeholders in the template's own query text (a '?' inside ${…}) do not confuse
	// where the query starts.
	if got, _ = ExpandURI("log://x?message=${body.q}", ex); got != "log://x?message=a%2Bb+c%25d" {
		t.Fatalf("got %s", got)
	}
}

func TestFromPlaceholder(t *testing.T) {
	u, _ := Parse("file:///d?fileName=a%26b&operation=read")
	u.Template = "file:///d?fileName=${body.p}&operation=read"
	if !u.FromPlaceholder("fileName") || u.FromPlaceholder("operation") || u.FromPlaceholder("allowEscape") {
		t.Fatal("FromPlaceholder wrong")
	}
	u.Template = ""
	if u.FromPlaceholder("fileName") {
		t.Fatal("a URI without template has no placeholder options")
	}
}

func TestAddressFromPlaceholder(t *testing.T) {
	u, _ := Parse("file:///tmp/x?fileName=a")
	for tpl, want := range map[string]bool{
		"":                                 false,
		"file:///tmp/x?fileName=${body.p}": false,
		"file://${body.dir}?fileName=a":    true,
		"file:///srv/${header.X}":          true,
	} {
		u.Template = tpl
		if got := u.AddressFromPlaceholder(); got != want {
			t.Errorf("%q: %v, want %v", tpl, got, want)
		}
	}
}
