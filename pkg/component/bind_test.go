package component_test

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/uri"
)

// demoOptions binds every option of testSpec.
type demoOptions struct {
	Period     time.Duration `option:"period"`
	Count      int64         `option:"count"`
	CountGiven bool          `option:"count,given"`
	PeriodSet  bool          `option:"period,given"`
	Verbose    bool          `option:"verbose"`
	Level      string        `option:"level"`
	Token      int           `option:"token"`
	Name       string        `option:"name"`
	Args       []string      `option:"arg"`
	Must       string        `option:"must"`
}

var demoBinding = component.Bind[demoOptions](testSpec)

func bindURI(t *testing.T, raw string) *uri.URI {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestBindTypedValuesAndDefaults(t *testing.T) {
	t.Parallel()
	o, err := demoBinding.Parse(bindURI(t, "demo://x?must=1&count=7&verbose=yes&level=DBG&arg=a&arg=b&name=${x}"))
	if err != nil {
		t.Fatal(err)
	}
	want := demoOptions{Period: time.Second, Count: 7, CountGiven: true, Verbose: true, Level: "debug",
		Name: "${x}", Args: []string{"a", "b"}, Must: "1"}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got  %+v\nwant %+v", o, want)
	}
}

func TestBindReportsParseErrors(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"demo://x?must=1&peroid=5s":     `unknown option "peroid" (did you mean "period"?)`,
		"demo://x?must=1&count=many":    `option count="many" is not a whole number`,
		"demo://x?must=1&token=hunter2": "option token is not a whole number (the value is secret and not shown)",
		"demo://x":                      "option must is required",
		"demo://x?must=1&must=2":        "option must is given 2 times",
	} {
		_, err := demoBinding.Parse(bindURI(t, raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the secret shows in %q", raw, err)
		}
	}
}

func TestBindOpenOptionsGoToTheExtraField(t *testing.T) {
	t.Parallel()
	open := &component.Spec{Scheme: "web", Summary: "s", Syntax: "web://h", OpenOptions: "sent to the server",
		Options: []component.Option{{Name: "timeout", Type: component.TypeDuration, Description: "d"}}}
	type webOptions struct {
		Timeout time.Duration `option:"timeout"`
		Query   url.Values    `option:",extra"`
	}
	b := component.Bind[webOptions](open)
	o, err := b.Parse(bindURI(t, "web://h/p?q=otters&timeout=5s&page=2"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Timeout != 5*time.Second || o.Query.Get("q") != "otters" || o.Query.Get("page") != "2" || o.Query.Has("timeout") {
		t.Errorf("got %+v", o)
	}
	o, err = b.Parse(bindURI(t, "web://h/p"))
	if err != nil || o.Query != nil {
		t.Errorf("no extras: got %+v, %v", o, err)
	}
}

func TestBindIntOverflowIsAnOptionError(t *testing.T) {
	t.Parallel()
	s := &component.Spec{Scheme: "small", Summary: "s", Syntax: "small://x",
		Options: []component.Option{{Name: "n", Type: component.TypeInt, Description: "d"}}}
	type smallOptions struct {
		N int8 `option:"n"`
	}
	b := component.Bind[smallOptions](s)
	if o, err := b.Parse(bindURI(t, "small://x?n=100")); err != nil || o.N != 100 {
		t.Errorf("n=100: %+v, %v", o, err)
	}
	_, err := b.Parse(bindURI(t, "small://x?n=300"))
	if err == nil || !strings.Contains(err.Error(), `option n="300" is too large`) {
		t.Errorf("n=300: got %v", err)
	}
}

// TestBindMismatchesAreErrors: a struct that does not fit its spec is refused by
// Check and by Parse, with a message naming each mistake, and nothing panics.
func TestBindMismatchesAreErrors(t *testing.T) {
	t.Parallel()
	type mistakes struct {
		Period   string        `option:"period"` // wrong type
		Perod    time.Duration `option:"perod"`  // not declared
		Count    int64         `option:"count"`  // fine
		Again    int64         `option:"count"`  // bound twice
		Verbose  string        `option:"verbose,given"`
		Level    string        `option:"level,sometimes"`
		Args     string        `option:"arg"` // Multiple needs []string
		Untagged string
		//lint:ignore U1000 Bind must refuse an unexported field, so the test declares one it never reads
		must  string     `option:"must"` // unexported
		Extra url.Values `option:",extra"`
		_     struct{}   `option:"name,elsewhere"`
		_     struct{}   `option:"nothing,elsewhere"`
	}
	b := component.Bind[mistakes](testSpec)
	err := b.Check()
	for _, w := range []string{
		"options of demo:// bound to component_test.mistakes",
		`field Period: option period is a duration: use time.Duration, not string`,
		`field Perod: option "perod" is not declared (did you mean "period"?)`,
		`field Again: option count is bound twice`,
		`field Verbose: a ",given" field must be a bool`,
		`field Level: unknown tag modifier "sometimes"`,
		`field Args: option arg may be given more than once: use []string, not string`,
		`field Untagged: no option tag`,
		`field must: unexported`,
		`field Extra: demo:// has no open options`,
		`field _: option "nothing" is not declared`,
		`option token is declared but no field binds it (add a field tagged option:"token", or a blank field tagged option:"token,elsewhere" when other code reads it)`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Check() = %v\nwant it to mention %q", err, w)
		}
	}
	if _, perr := b.Parse(bindURI(t, "demo://x?must=1")); perr == nil || perr.Error() != err.Error() {
		t.Errorf("Parse must fail as Check does: %v", perr)
	}
	open := &component.Spec{Scheme: "web", Summary: "s", Syntax: "web://h", OpenOptions: "sent on"}
	if err := component.Bind[struct{}](open).Check(); err == nil || !strings.Contains(err.Error(), `web:// sends unknown parameters on: bind them to a url.Values field tagged option:",extra"`) {
		t.Errorf("open spec without extra field: %v", err)
	}
	if err := component.Bind[int](testSpec).Check(); err == nil || !strings.Contains(err.Error(), "int is not a struct") {
		t.Errorf("non-struct: %v", err)
	}
}

func TestBindingsAreListed(t *testing.T) {
	t.Parallel()
	for _, b := range component.Bindings() {
		if b.Spec() == testSpec {
			if b.Check() != nil {
				t.Error(b.Check())
			}
			return
		}
	}
	t.Error("demoBinding is not listed by Bindings()")
}

// Listener options shared by several specs live in one struct that the components'
// options structs embed.
type SharedTimeouts struct {
	Period time.Duration `option:"period,nodefault"`
}

func TestBindEmbeddedStructAndNoDefault(t *testing.T) {
	t.Parallel()
	type withShared struct {
		SharedTimeouts
		Count int64    `option:"count,nodefault"`
		Rest  struct{} `option:"verbose,elsewhere"`
		_     struct{} `option:"level,elsewhere"`
		_     struct{} `option:"token,elsewhere"`
		_     struct{} `option:"name,elsewhere"`
		_     struct{} `option:"arg,elsewhere"`
		Must  string   `option:"must,nodefault"`
	}
	b := component.Bind[withShared](testSpec)
	o, err := b.Parse(bindURI(t, "demo://x?must=m"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Period != 0 || o.Count != 0 || o.Must != "m" {
		t.Errorf("absent options with nodefault stay zero: %+v", o)
	}
	o, err = b.Parse(bindURI(t, "demo://x?must=m&period=2s&count=0"))
	if err != nil || o.Period != 2*time.Second {
		t.Errorf("given: %+v, %v", o, err)
	}
}

// TestOptionsHaveNoByNameReaders keeps options from being read by name, where a
// misspelt name silently gives the zero value: values reach components only through
// a Binding's struct fields, which the compiler checks.
func TestOptionsHaveNoByNameReaders(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeOf(&component.Options{})
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		for j := 1; j < m.Type.NumIn(); j++ {
			if m.Type.In(j).Kind() == reflect.String {
				t.Errorf("Options.%s takes a string: options must not be read by name; bind them to a struct with component.Bind", m.Name)
			}
		}
	}
}

func TestBindTellsWhichValuesCameFromPlaceholders(t *testing.T) {
	t.Parallel()
	type fromData struct {
		demoOptions
		NameFromData bool `option:"name,placeholder"`
		MustFromData bool `option:"must,placeholder"`
	}
	b := component.Bind[fromData](testSpec)
	u := bindURI(t, "demo://x?must=1&name=orders.csv")
	if o, err := b.Parse(u); err != nil || o.NameFromData || o.MustFromData {
		t.Errorf("no template: %+v, %v", o, err)
	}
	u.Template = "demo://x?must=1&name=${body.file}"
	o, err := b.Parse(u)
	if err != nil || !o.NameFromData || o.MustFromData || o.Name != "orders.csv" {
		t.Errorf("name from a placeholder: %+v, %v", o, err)
	}
}

func TestBindMultipleOptionWithDefault(t *testing.T) {
	t.Parallel()
	s := &component.Spec{Scheme: "many", Summary: "s", Syntax: "many://x",
		Options: []component.Option{{Name: "tag", Type: component.TypeString, Multiple: true, Default: "all", Description: "d"}}}
	type manyOptions struct {
		Tags []string `option:"tag"`
	}
	b := component.Bind[manyOptions](s)
	if o, err := b.Parse(bindURI(t, "many://x")); err != nil || !reflect.DeepEqual(o.Tags, []string{"all"}) {
		t.Errorf("default: %+v, %v", o, err)
	}
	if o, err := b.Parse(bindURI(t, "many://x?tag=a&tag=b")); err != nil || !reflect.DeepEqual(o.Tags, []string{"a", "b"}) {
		t.Errorf("given: %+v, %v", o, err)
	}
}

func TestBindJoinsProblemsAsParseDoes(t *testing.T) {
	t.Parallel()
	s := &component.Spec{Scheme: "small", Summary: "s", Syntax: "small://x",
		Options: []component.Option{{Name: "a", Type: component.TypeInt, Description: "d"}, {Name: "b", Type: component.TypeInt, Description: "d"}}}
	type smallOptions struct {
		A int8  `option:"a"`
		B int16 `option:"b"`
	}
	_, err := component.Bind[smallOptions](s).Parse(bindURI(t, "small://x?a=1000&b=100000"))
	want := `option a="1000" is too large (use a number that fits in 8 bits); option b="100000" is too large (use a number that fits in 16 bits)`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// FuzzBindParse: whatever the URI, binding it is a value or an error, never a panic,
// and a secret option's value never shows in the error.
func FuzzBindParse(f *testing.F) {
	for _, seed := range []string{
		"demo://x?must=1&count=7&verbose=yes&level=DBG&arg=a&arg=b&name=${x}",
		"demo://x?must=1&token=99999999999999999999", "demo://x?must=&must=", "demo://x?arg=&period=-1",
		"demo://x?%zz=1", "demo://x?must=1&level=dbg&level=info",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := uri.Parse(raw)
		if err != nil {
			return
		}
		_, err = demoBinding.Parse(u)
		if err == nil {
			return
		}
		for _, v := range u.Params["token"] {
			// Only a value written once, so another option's value cannot be it.
			if len(v) >= 4 && strings.Count(raw, v) == 1 && strings.Contains(err.Error(), v) {
				t.Errorf("secret token value %q shows in %v", v, err)
			}
		}
	})
}
