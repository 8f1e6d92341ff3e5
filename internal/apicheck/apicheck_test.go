package apicheck

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite api/helix.txt with the current public API")

// apiFile is the checked-in list of the public API.
const apiFile = "../../api/helix.txt"

// The public Go API (every package under pkg/) is what api/helix.txt says it is. A
// change fails here with the lines that changed; a deliberate change is accepted by
// rewriting the file (go test ./internal/apicheck -update) and explained in the
// changelog of docs/go-api.md.
func TestPublicAPIUnchanged(t *testing.T) {
	got, err := Describe("../..", "./pkg/...")
	if err != nil {
		t.Fatal(err)
	}
	text := Header + strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.MkdirAll(filepath.Dir(apiFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(apiFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatalf("%v\nCreate it with: go test ./internal/apicheck -update", err)
	}
	if msg := Compare(ParseFile(string(want)), got); msg != "" {
		t.Fatal(msg)
	}
}

// Describe lists constants with values, variables, functions, types, exported
// fields, interface methods and the method set of *T; an alias of an internal type
// and the internal types public signatures mention are listed under their own path;
// unexported names and internal types nothing public reaches are not.
func TestDescribeFixture(t *testing.T) {
	got, err := Describe(filepath.Join("testdata", "fixture"), "./...")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`internal/impl, method (*Options) Apply() error`,
		`internal/impl, type Level int`,
		`internal/impl, type Options struct`,
		`internal/impl, type Options struct, Name string`,
		`internal/impl, type Options struct, Retries int`,
		`pkg/lib, const Version untyped string = "1.2"`,
		`pkg/lib, func New(context.Context) *pkg/lib.Thing`,
		`pkg/lib, method (*Thing) Grow(int) *pkg/lib.Thing`,
		`pkg/lib, method (Thing) Describe() string`,
		`pkg/lib, type Func func`,
		`pkg/lib, type Func func(int) (string, error)`,
		`pkg/lib, type Options = internal/impl.Options`,
		`pkg/lib, type Runner interface`,
		`pkg/lib, type Runner interface, Run(context.Context, *pkg/lib.Options) error`,
		`pkg/lib, type Thing struct`,
		`pkg/lib, type Thing struct, Level internal/impl.Level`,
		`pkg/lib, type Thing struct, Size int`,
		`pkg/lib, var Default pkg/lib.Thing`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Describe(fixture):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Compare says nothing when the lists agree; otherwise it names every removed and
// added line, calls a change with a removed line incompatible, and says how to accept
// the change and where to explain it.
func TestCompare(t *testing.T) {
	old := []string{"pkg/a, func F()", "pkg/a, func G() int"}
	if msg := Compare(old, old); msg != "" {
		t.Fatalf("same API: %q", msg)
	}
	added := Compare(old, append(old[:2:2], "pkg/a, func H()"))
	for _, want := range []string{"compatible", "+ pkg/a, func H()", "go test ./internal/apicheck -update", "docs/go-api.md"} {
		if !strings.Contains(added, want) {
			t.Errorf("addition message lacks %q:\n%s", want, added)
		}
	}
	if strings.Contains(added, "INCOMPATIBLE") {
		t.Errorf("an addition is called incompatible:\n%s", added)
	}
	changed := Compare(old, []string{"pkg/a, func F()", "pkg/a, func G() string"})
	for _, want := range []string{"INCOMPATIBLE", "- pkg/a, func G() int", "+ pkg/a, func G() string"} {
		if !strings.Contains(changed, want) {
			t.Errorf("change message lacks %q:\n%s", want, changed)
		}
	}
}

// ParseFile skips the header comment and blank lines of api/helix.txt.
func TestParseFile(t *testing.T) {
	got := ParseFile(Header + "pkg/a, func F()\n\npkg/a, func G()\n")
	if strings.Join(got, "|") != "pkg/a, func F()|pkg/a, func G()" {
		t.Fatalf("ParseFile = %q", got)
	}
}
