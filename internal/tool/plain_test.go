package tool

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// roundTrip is what plainJSON did for every value before isPlainJSON: encode with
// encoding/json, decode into an any.
func roundTrip(t *testing.T, v any) (any, bool) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return out, true
}

// TestPlainJSONSkipsOnlyIdentityRoundTrips: every value isPlainJSON lets through
// comes back from the encoding/json round trip deeply equal (same types, same
// numbers, same strings), and values the round trip changes or refuses are not
// let through, so plainJSON answers exactly as with the round trip.
func TestPlainJSONSkipsOnlyIdentityRoundTrips(t *testing.T) {
	negZero := math.Copysign(0, -1)
	plain := []any{
		nil, true, false, 1.5, negZero, 1e300, math.SmallestNonzeroFloat64, 0.1,
		map[string]any{}, []any{},
		map[string]any{"text": "hello", "n": 3.0, "ok": true, "nil": nil},
		map[string]any{"é<>&\u2028": []any{"\u2029", "tab\t", map[string]any{"deep": []any{1.0, "x"}}}},
		[]any{"a", 2.0, nil},
	}
	for _, v := range plain {
		if !isPlainJSON(v, 0) {
			t.Errorf("%#v: not taken as plain JSON", v)
			continue
		}
		back, ok := roundTrip(t, v)
		if !ok || !reflect.DeepEqual(back, v) {
			t.Errorf("%#v: round trip gives %#v", v, back)
		}
		if f, ok := v.(float64); ok && math.Signbit(f) != math.Signbit(back.(float64)) {
			t.Errorf("%v: sign lost in the round trip", f)
		}
		got, err := plainJSON(v)
		if err != nil || !reflect.DeepEqual(got, back) {
			t.Errorf("plainJSON(%#v) = %#v, %v; the round trip gives %#v", v, got, err, back)
		}
	}
	var nilMap map[string]any
	var nilSlice []any
	deep := any("x")
	for range maxPlainDepth + 2 {
		deep = []any{deep}
	}
	notPlain := []any{
		"top-level strings are JSON text", int64(3), int(3), float32(1.5), math.NaN(), math.Inf(1),
		map[string]any{"n": int64(1)}, []any{"ok", int64(2)}, map[string]any{"bad": "\xff"},
		map[string]any{"\xfe": 1.0}, nilMap, nilSlice, map[string]string{"a": "b"}, []string{"a"},
		struct{ A int }{1}, deep,
	}
	for _, v := range notPlain {
		if isPlainJSON(v, 0) {
			t.Errorf("%#v: taken as plain JSON, but the round trip changes or refuses it", v)
		}
	}
	// Invalid UTF-8 is what the round trip changes silently: it must stay on it.
	got, err := plainJSON(map[string]any{"bad": "a\xffb"})
	if err != nil || got.(map[string]any)["bad"] != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: got %#v, %v", got, err)
	}
	if _, err := plainJSON(math.NaN()); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN: %v, want the encoder's error", err)
	}
}
