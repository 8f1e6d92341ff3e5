package component_test

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/uri"
)

var testSpec = &component.Spec{
	Scheme: "demo", Summary: "a demo", Syntax: "demo://name[?options]",
	Options: []component.Option{
		{Name: "period", Type: component.TypeDuration, Default: "1s", Description: "d"},
		{Name: "count", Type: component.TypeInt, Default: "3", Description: "d"},
		{Name: "verbose", Type: component.TypeBool, Default: "false", Description: "d"},
		{Name: "level", Type: component.TypeEnum, Default: "info", Enum: []string{"debug", "info"}, EnumAliases: map[string]string{"dbg": "debug"}, Description: "d"},
		{Name: "token", Type: component.TypeInt, Secret: true, Description: "d"},
		{Name: "name", Type: component.TypeString, Description: "d"},
		{Name: "arg", Type: component.TypeString, Multiple: true, Description: "d"},
		{Name: "must", Type: component.TypeString, Required: true, Description: "d"},
	},
}

func parse(t *testing.T, s *component.Spec, raw string) (*component.Options, error) {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s.Parse(u)
}

func TestSpecParseErrors(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []string
		not  string
	}{
		{"demo://x?must=1&peroid=5s", []string{`unknown option "peroid"`, `did you mean "period"?`}, ""},
		{"demo://x?must=1&zzzzzz=1", []string{`unknown option "zzzzzz"`, "options: period, count"}, ""},
		{"demo://x?must=1&period=soon", []string{`option period="soon" is not a duration`}, ""},
		{"demo://x?must=1&count=many", []string{`option count="many" is not a whole number`}, ""},
		{"demo://x?must=1&verbose=maybe", []string{`option verbose="maybe" is not a boolean`, "use true or false"}, ""},
		{"demo://x?must=1&level=loud", []string{`option level="loud" is not one of the allowed values`, "use debug or info"}, ""},
		{"demo://x?must=1&token=hunter2", []string{"option token is not a whole number", "secret and not shown"}, "hunter2"},
		{"demo://x?must=1&count=1&count=2", []string{"option count is given 2 times"}, ""},
		{"demo://x", []string{"option must is required"}, ""},
		{"demo://x?peroid=1&levl=x", []string{`"peroid"`, `"levl"`, "option must is required"}, ""},
	} {
		_, err := parse(t, testSpec, tc.raw)
		if err == nil {
			t.Errorf("%s: no error", tc.raw)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tc.raw, err, w)
			}
		}
		if tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: error %q shows %q", tc.raw, err, tc.not)
		}
	}
}

func TestSpecOpenOptionsAndNoOptions(t *testing.T) {
	open := &component.Spec{Scheme: "web", Summary: "s", Syntax: "web://h", OpenOptions: "sent to the server",
		Options: []component.Option{{Name: "timeout", Type: component.TypeDuration, Description: "d"}}}
	if _, err := parse(t, open, "web://h/p?q=otters&timeout=5s&page=2"); err != nil {
		t.Fatal(err)
	}
	if _, err := parse(t, open, "web://h?timeout=x"); err == nil {
		t.Error("an open spec still checks its own options' types")
	}
	none := &component.Spec{Scheme: "direct", Summary: "s", Syntax: "direct://name"}
	if _, err := parse(t, none, "direct://x?foo=1"); err == nil || !strings.Contains(err.Error(), "direct:// takes no options") {
		t.Errorf("got %v", err)
	}
}

func TestSpecCheck(t *testing.T) {
	if err := testSpec.Check(); err != nil {
		t.Fatal(err)
	}
	bad := &component.Spec{Scheme: "bad", Summary: "s", Syntax: "bad://",
		Options: []component.Option{
			{Name: "a", Type: component.TypeDuration, Default: "soon", Description: "d"},
			{Name: "a", Type: component.TypeEnum, Description: "d"},
			{Name: "b", Type: "float"},
		},
		Headers: []component.Header{{Name: "X"}},
	}
	err := bad.Check()
	for _, w := range []string{`default "soon"`, "duplicate", "enum without values", `unknown type "float"`, "no description", `header "X"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Check() = %v, want it to mention %q", err, w)
		}
	}
}

func TestSpecRedact(t *testing.T) {
	for raw, want := range map[string]string{
		"demo://x?token=s3cret&count=1": "demo://x?token=***&count=1",
		"demo://x?count=1":              "demo://x?count=1",
		"demo://x":                      "demo://x",
		"demo://x?tok%65n=s3cret":       "demo://x?tok%65n=***",
		"demo://app:s3cret@db:5432/x":   "demo://app:***@db:5432/x",
		"demo://app@db/x":               "demo://app@db/x",
	} {
		if got := testSpec.Redact(raw); got != want {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestSpecCheckTemplate(t *testing.T) {
	for raw, want := range map[string]string{
		"demo://x?must=${body.m}&period=${body.p}":        "",
		"demo://x?must=1&name=${body.n}&count=2":          "",
		"demo://x?must=1&nmae=${body.n}":                  `unknown option "nmae" (did you mean "name"?)`,
		"demo://x?must=1&count=${body.c}&verbose=perhaps": `option verbose="perhaps" is not a boolean`,
		"demo://x?name=${body.n}":                         "option must is required",
	} {
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		err = testSpec.CheckTemplate(u)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", raw, err, want)
		}
	}
}

func TestSpecNearMisses(t *testing.T) {
	open := &component.Spec{Scheme: "web", Summary: "s", Syntax: "web://h", OpenOptions: "sent on",
		Options: []component.Option{{Name: "timeout", Type: component.TypeDuration, Description: "d"}}}
	u, _ := uri.Parse("web://h?timeot=5s&q=otters&timeout=1s&tiemout=2")
	got := open.NearMisses(u)
	if len(got) != 2 || got[0] != [2]string{"tiemout", "timeout"} || got[1] != [2]string{"timeot", "timeout"} {
		t.Errorf("NearMisses = %v", got)
	}
	if testSpec.NearMisses(u) != nil {
		t.Error("a closed spec has no near misses: its unknown options are errors")
	}
}
