package jsonnum_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	segjson "github.com/segmentio/encoding/json"

	"github.com/arvenza/helix/internal/jsonnum"
)

// decodeStd decodes like a PostgreSQL notification payload: encoding/json with
// UseNumber.
func decodeStd(t *testing.T, text string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return v
}

// decodeSeg decodes like tool arguments: segmentio's parser, integers straight
// into int64, other numbers as json.Number.
func decodeSeg(t *testing.T, text string) any {
	t.Helper()
	var v any
	if _, err := segjson.Parse([]byte(text), &v, segjson.UseInt64|segjson.UseNumber); err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return v
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		json string
		want any
	}{
		// A notification payload may be any JSON value, numbers at the top included.
		{`42`, int64(42)},
		{`-7`, int64(-7)},
		{`2.5`, 2.5},
		{`1e3`, 1000.0},
		{`"42"`, "42"},
		{`null`, nil},
		{`true`, true},
		{`-0`, int64(0)},
		{`-0.0`, negZero},
		{`1e-400`, 0.0},
		{`1e308`, 1e308},
		{`9223372036854775807`, int64(math.MaxInt64)},
		{`-9223372036854775808`, int64(math.MinInt64)},
		{`9223372036854775808`, 9223372036854775808.0}, // beyond int64: a float
		{`99999999999999999999`, 1e20},
		// Tool arguments: objects and arrays, nested.
		{`{"a": 1, "b": [2.5, {"c": 3}], "d": "x", "e": null}`,
			map[string]any{"a": int64(1), "b": []any{2.5, map[string]any{"c": int64(3)}}, "d": "x", "e": nil}},
		{`[[[[1]]], []]`, []any{[]any{[]any{[]any{int64(1)}}}, []any{}}},
		{`{}`, map[string]any{}},
	} {
		for name, decode := range map[string]func(*testing.T, string) any{"encoding/json": decodeStd, "segmentio": decodeSeg} {
			v := decode(t, tc.json)
			if err := jsonnum.Normalize(&v); err != nil {
				t.Errorf("%s %s: %v", name, tc.json, err)
				continue
			}
			if !reflect.DeepEqual(v, tc.want) {
				t.Errorf("%s %s: %#v, want %#v", name, tc.json, v, tc.want)
			}
			if f, ok := tc.want.(float64); ok && math.Signbit(f) != math.Signbit(v.(float64)) {
				t.Errorf("%s %s: sign of %v lost", name, tc.json, v)
			}
		}
	}
}

// A number beyond float64's range would be ±Inf, which no JSON text can carry
// back: it is refused with where it is, as a JSON Pointer.
func TestNormalizeRefusesNumbersBeyondFloat64(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ json, number, pointer string }{
		{`1e400`, "1e400", ""},
		{`-1e400`, "-1e400", ""},
		{`{"x": 1E+999999}`, "1E+999999", "/x"},
		{`{"list": [1, {"y": 2e308}]}`, "2e308", "/list/1/y"},
		{`{"a/b": {"c~d": [-1e400]}}`, "-1e400", "/a~1b/c~0d/0"},
	} {
		for name, decode := range map[string]func(*testing.T, string) any{"encoding/json": decodeStd, "segmentio": decodeSeg} {
			v := decode(t, tc.json)
			err := jsonnum.Normalize(&v)
			var re *jsonnum.RangeError
			if !errors.As(err, &re) {
				t.Errorf("%s %s: error %v, want a *RangeError", name, tc.json, err)
				continue
			}
			if re.Number != tc.number || re.Pointer() != tc.pointer {
				t.Errorf("%s %s: number %q at %q, want %q at %q", name, tc.json, re.Number, re.Pointer(), tc.number, tc.pointer)
			}
			msg := err.Error()
			if !strings.Contains(msg, "too large") || !strings.Contains(msg, tc.number) || strings.Contains(msg, "Inf") ||
				(tc.pointer != "" && !strings.Contains(msg, " at "+tc.pointer+" ")) || (tc.pointer == "" && strings.Contains(msg, " at /")) {
				t.Errorf("%s %s: message %q", name, tc.json, msg)
			}
		}
	}
}

// A huge number is named in the message by its first 40 characters only.
func TestRangeErrorShortensTheNumber(t *testing.T) {
	t.Parallel()
	v := any(json.Number("1" + strings.Repeat("0", 400)))
	err := jsonnum.Normalize(&v)
	if err == nil || !strings.Contains(err.Error(), strings.Repeat("0", 39)+"…") || len(err.Error()) > 200 {
		t.Fatalf("error %v", err)
	}
}

// Values that hold no json.Number, or types Normalize does not walk into, are left
// as they are.
func TestNormalizeLeavesOtherValues(t *testing.T) {
	t.Parallel()
	type named map[string]any
	for _, in := range []any{nil, "1", int64(3), 2.5, true, named{"a": json.Number("1")}, []string{"1"}} {
		v := in
		if err := jsonnum.Normalize(&v); err != nil || !reflect.DeepEqual(v, in) {
			t.Errorf("%#v became %#v (%v)", in, v, err)
		}
	}
}
