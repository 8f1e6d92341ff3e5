package tool

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkLikeMarshal fails unless marshalText(v) answers as json.Marshal(v) does
// without HTML escaping (a json.Encoder with SetEscapeHTML(false), less its newline).
func checkLikeMarshal(t *testing.T, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	wantErr := enc.Encode(v)
	want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	got, err := marshalText(v)
	if (err != nil) != (wantErr != nil) || (err == nil && got != string(want)) {
		t.Errorf("%#v:\n got %q, %v\nwant %q, %v", v, got, err, want, wantErr)
	}
}

func TestMarshalTextLikeMarshal(t *testing.T) {
	negZero := math.Copysign(0, -1)
	var nilMap map[string]any
	var nilSlice []any
	deep := any("x")
	for range maxPlainDepth + 2 {
		deep = map[string]any{"d": []any{deep}}
	}
	values := []any{
		nil, true, false, 0.0, negZero, 1.0, -1.5, 0.1, 1e20, 1e21, 123456789e13, 1e-6, 1e-7, 9.999e-7,
		-2.5e-9, 1e300, -1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, 3.0e-5, 12345678.9,
		math.NaN(), math.Inf(1), math.Inf(-1),
		"", "hello", "é<>&'\"\\/\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe bad \xc3", "日本語 🎉",
		map[string]any{}, []any{}, nilMap, nilSlice,
		map[string]any{"text": "hello", "n": 3.0, "ok": true, "nil": nil, "b": map[string]any{"z": 1.0, "a": []any{}}},
		map[string]any{"é": 1.0, "e": 2.0, "E": 3.0, "": 4.0, "<k>": 5.0, "\xff": 6.0, "ab": 7.0, "a": 8.0},
		[]any{"a", 2.0, nil, []any{nilMap, nilSlice}, map[string]any{"x": math.NaN()}},
		deep,
		// Not plain: json.Marshal's business.
		int64(3), 7, map[string]string{"a": "b"}, []string{"x"}, struct{ A int }{1}, json.RawMessage(`{"a":1}`),
		map[string]any{"f": func() {}}, []any{int64(1)},
	}
	many := map[string]any{}
	for i := range 40 {
		many[strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune('A'+i))] = float64(i)
	}
	values = append(values, many)
	for _, v := range values {
		checkLikeMarshal(t, v)
	}
}

// Random values of the kinds json.Unmarshal gives, with awkward strings and numbers.
func TestMarshalTextLikeMarshalRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "é", "<", ">", "&", "\"", "\\", "\n", "\x01", "\u2028", "\u2029", "\xff", "🎉", " ", "Z"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	var gen func(depth int) any
	gen = func(depth int) any {
		k := r.IntN(7)
		if depth > 4 {
			k = r.IntN(4)
		}
		switch k {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			switch r.IntN(3) {
			case 0:
				return float64(r.IntN(2000) - 1000)
			case 1:
				return math.Float64frombits(r.Uint64())
			default:
				return r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
			}
		case 3:
			return str()
		case 4, 5:
			m := map[string]any{}
			for range r.IntN(8) {
				m[str()] = gen(depth + 1)
			}
			return m
		default:
			a := []any{}
			for range r.IntN(5) {
				a = append(a, gen(depth+1))
			}
			return a
		}
	}
	for range 5000 {
		checkLikeMarshal(t, gen(0))
	}
}

func FuzzMarshalTextLikeMarshal(f *testing.F) {
	f.Add([]byte(`{"a":[1,2.5e-9,"x<\u2028"],"b":null,"c":{"é":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		checkLikeMarshal(t, v)
	})
}
