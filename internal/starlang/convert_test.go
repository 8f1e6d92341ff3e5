package starlang

import (
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.starlark.net/starlark"
)

type point struct {
	X int    `json:"x"`
	Y string `json:"y,omitempty"`
}

type label string

func TestToStarlark(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string // Starlark repr of the result
	}{
		{"nil", nil, "None"},
		{"bool", true, "True"},
		{"string", "a", `"a"`},
		{"bytes", []byte("b"), `"b"`},
		{"named string", label("x"), `"x"`},
		{"int", 3, "3"},
		{"int8", int8(-3), "-3"},
		{"uint64 max", uint64(math.MaxUint64), "18446744073709551615"},
		{"float", 1.5, "1.5"},
		{"integral float", 7.0, "7"},
		{"huge float", 1e300, "1e+300"},
		{"NaN", math.NaN(), "nan"},
		{"float32", float32(0.5), "0.5"},
		{"json int", json.Number("12345678901234567890123"), "12345678901234567890123"},
		{"json float", json.Number("1e3"), "1000.0"},
		{"raw json", json.RawMessage(`{"a":[1,2.5]}`), `{"a": [1, 2.5]}`},
		{"map sorted", map[string]any{"b": 1, "a": []any{"x"}}, `{"a": ["x"], "b": 1}`},
		{"string slice", []string{"a", "b"}, `["a", "b"]`},
		{"slice of maps", []map[string]any{{"k": nil}}, `[{"k": None}]`},
		{"nil slice", []any(nil), "[]"},
		{"array", [2]int{1, 2}, "[1, 2]"},
		{"http header", http.Header{"X": {"1", "2"}}, `{"X": ["1", "2"]}`},
		{"int keys", map[int]string{2: "b", 1: "a"}, `{1: "a", 2: "b"}`},
		{"struct via json", point{X: 1}, `{"x": 1}`},
		{"pointer to struct", &point{X: 2, Y: "y"}, `{"x": 2, "y": "y"}`},
		{"nil pointer", (*point)(nil), "None"},
		{"duration", 90 * time.Second, "1m30s"},
		{"starlark value", starlark.String("s"), `"s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ToStarlark(tt.in)
			if err != nil {
				t.Fatalf("ToStarlark(%#v): %v", tt.in, err)
			}
			if got := v.String(); got != tt.want {
				t.Errorf("ToStarlark(%#v) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}

	for _, bad := range []any{make(chan int), func() {}, complex(1, 2), map[point]int{{}: 1}} {
		if _, err := ToStarlark(bad); err == nil {
			t.Errorf("ToStarlark(%T) succeeded, want error", bad)
		}
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if _, err := ToStarlark(cyclic); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("ToStarlark(cyclic map) err = %v, want depth error", err)
	}
}

func TestFromStarlark(t *testing.T) {
	tests := []struct {
		src  string
		want any
	}{
		{"None", nil},
		{"True", true},
		{"42", int64(42)},
		{"-9223372036854775808", int64(math.MinInt64)},
		{"9223372036854775808", float64(9223372036854775808)},
		{"2.5", 2.5},
		{`"s"`, "s"},
		{`b"\x00b"`, []byte{0, 'b'}},
		{`[1, "a", None]`, []any{int64(1), "a", nil}},
		{`(1, 2)`, []any{int64(1), int64(2)}},
		{`set([2, 1])`, []any{int64(2), int64(1)}},
		{`{"a": {"b": [True]}}`, map[string]any{"a": map[string]any{"b": []any{true}}}},
		{`{1: "x", 2.5: "y", False: "z"}`, map[string]any{"1": "x", "2.5": "y", "False": "z"}},
		{`time.from_timestamp(0)`, time.Unix(0, 0)},
		{`time.parse_duration("2s")`, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			v, err := starlark.EvalOptions(fileOptions, &starlark.Thread{}, "test", tt.src, fixed)
			if err != nil {
				t.Fatalf("eval %s: %v", tt.src, err)
			}
			got, err := FromStarlark(v)
			if err != nil {
				t.Fatalf("FromStarlark(%s): %v", tt.src, err)
			}
			if tm, ok := tt.want.(time.Time); ok {
				if gt, ok := got.(time.Time); !ok || !gt.Equal(tm) {
					t.Errorf("FromStarlark(%s) = %#v, want %v", tt.src, got, tm)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FromStarlark(%s) = %#v, want %#v", tt.src, got, tt.want)
			}
		})
	}

	for _, src := range []string{`len`, `json`, `{(1, 2): 3}`, `[len]`, `lambda: 1`} {
		v, err := starlark.EvalOptions(fileOptions, &starlark.Thread{}, "test", src, fixed)
		if err != nil {
			t.Fatalf("eval %s: %v", src, err)
		}
		if _, err := FromStarlark(v); err == nil {
			t.Errorf("FromStarlark(%s) succeeded, want error", src)
		}
	}
}

// TestJSONRoundTrip checks the property Helix relies on: a JSON document decoded by
// encoding/json, passed through Starlark and back, is the document again (with
// integers as int64).
func TestJSONRoundTrip(t *testing.T) {
	doc := `{"s":"x","i":7,"f":1.25,"b":false,"n":null,"l":[1,{"k":"v"}],"big":-9000000000000}`
	var in any
	if err := json.Unmarshal([]byte(doc), &in); err != nil {
		t.Fatal(err)
	}
	v, err := ToStarlark(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := FromStarlark(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(doc), &a)
	_ = json.Unmarshal(got, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip changed the document:\n got %s\nwant %s", got, doc)
	}
	if i := out.(map[string]any)["i"]; i != int64(7) {
		t.Errorf("integer came back as %T %v, want int64 7", i, i)
	}
}
