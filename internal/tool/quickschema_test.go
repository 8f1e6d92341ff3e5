package tool

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// resolve compiles schema with jsonschema-go, as CompileInput and resolveOutput do.
func resolveForTest(t testing.TB, schema string) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// agreesWithLibrary fails when the quick check accepts a value jsonschema-go refuses:
// the one way it could change what a call answers.
func agreesWithLibrary(t testing.TB, schema string, q *quickSchema, rs *jsonschema.Resolved, v any) {
	t.Helper()
	if q.valid(v) {
		if err := rs.Validate(v); err != nil {
			t.Fatalf("schema %s: quick check accepts %#v, jsonschema-go refuses it: %v", schema, v, err)
		}
	}
}

func TestQuickSchemaCompilesOnlyPlainSchemas(t *testing.T) {
	for schema, want := range map[string]bool{
		`{"type":"object","properties":{"text":{"type":"string","description":"d"}},"required":["text"]}`:                    true,
		`{"type":"object","properties":{"n":{"type":"integer","default":3},"l":{"type":"array","items":{"type":"number"}}}}`: true,
		`{"type":"object","additionalProperties":true}`:                                                                      true,
		`{"type":"object","properties":{"e":{"type":"string","enum":["a"]}}}`:                                                false,
		`{"type":"object","additionalProperties":false}`:                                                                     false,
		`{"type":["string","null"]}`:      false,
		`{"type":"string","minLength":2}`: false,
		`{"properties":{"a":{}}}`:         false, // properties without type object
		`{"type":"object","$ref":"#/x"}`:  false,
		`{"type":"null"}`:                 false,
		`[1]`:                             false,
	} {
		if got := compileQuick(json.RawMessage(schema)) != nil; got != want {
			t.Errorf("compileQuick(%s) compiled = %v, want %v", schema, got, want)
		}
	}
}

// TestQuickSchemaNeverAcceptsWhatTheLibraryRefuses: random values of every kind
// against plain schemas of every kind; the quick check must accept the valid
// common cases (so that it is used) and nothing jsonschema-go refuses.
func TestQuickSchemaNeverAcceptsWhatTheLibraryRefuses(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		`{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number"},"b":{"type":"boolean"}},"required":["n","x"]}`,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}},"o":{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}}}`,
		`{"type":"object","properties":{"any":{},"arr":{"type":"array"}}}`,
	}
	r := rand.New(rand.NewPCG(17, 1))
	var value func(depth int) any
	value = func(depth int) any {
		switch r.IntN(10) {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return int64(r.IntN(200) - 100)
		case 3:
			return []float64{1.5, 2, math.Copysign(0, -1), 1e300, math.NaN(), math.Inf(1)}[r.IntN(6)]
		case 4:
			return []string{"", "hello", "é", "\xff"}[r.IntN(4)]
		case 5, 6:
			if depth > 3 {
				return "leaf"
			}
			n := r.IntN(3)
			a := make([]any, n)
			for i := range a {
				a[i] = value(depth + 1)
			}
			return a
		default:
			if depth > 3 {
				return int64(1)
			}
			m := map[string]any{}
			for _, k := range []string{"text", "n", "x", "b", "l", "o", "s", "any", "arr", "extra"} {
				if r.IntN(2) == 0 {
					m[k] = value(depth + 1)
				}
			}
			return m
		}
	}
	accepted := 0
	for _, schema := range schemas {
		q := compileQuick(json.RawMessage(schema))
		if q == nil {
			t.Fatalf("%s: not compiled", schema)
		}
		rs := resolveForTest(t, schema)
		for range 3000 {
			v := value(0)
			agreesWithLibrary(t, schema, q, rs, v)
			if q.valid(v) {
				accepted++
			}
		}
	}
	if accepted < 100 {
		t.Fatalf("the quick check accepted only %d values: it would hardly ever be used", accepted)
	}
	echo := compileQuick(json.RawMessage(schemas[0]))
	if !echo.valid(map[string]any{"text": "hello"}) || !echo.valid(map[string]any{"text": "x", "more": 1.5}) {
		t.Fatal("the echo tool's valid arguments are not accepted by the quick check")
	}
	for _, bad := range []any{map[string]any{}, map[string]any{"text": nil}, map[string]any{"text": int64(1)}, "text"} {
		if echo.valid(bad) {
			t.Errorf("quick check accepts %#v", bad)
		}
	}
}

// FuzzQuickSchema: JSON values decoded as tool arguments are, against the schemas
// of the test above.
func FuzzQuickSchema(f *testing.F) {
	f.Add(`{"text":"hi"}`, 0)
	f.Add(`{"n":1,"x":2.5,"b":true}`, 1)
	f.Add(`{"l":[1,2,3.5],"o":{"s":"x"}}`, 2)
	schemas := []string{
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		`{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number"},"b":{"type":"boolean"}},"required":["n","x"]}`,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}},"o":{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}}}`,
	}
	resolved := make([]*jsonschema.Resolved, len(schemas))
	quick := make([]*quickSchema, len(schemas))
	for i, s := range schemas {
		resolved[i], quick[i] = resolveForTest(f, s), compileQuick(json.RawMessage(s))
	}
	f.Fuzz(func(t *testing.T, args string, which int) {
		i := (which%len(schemas) + len(schemas)) % len(schemas)
		m, err := DecodeArguments(json.RawMessage(args))
		if err != nil {
			return
		}
		agreesWithLibrary(t, fmt.Sprint(schemas[i]), quick[i], resolved[i], m)
	})
}
