package plainjson

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/arvenza/helix/internal/plainjson/plainjsontest"
)

// marshalUnescaped is json.Marshal without HTML escaping: a json.Encoder with
// SetEscapeHTML(false), less the newline it ends with.
func marshalUnescaped(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Append writes the bytes json.Marshal writes, and leaves what it cannot.
func TestAppendLikeMarshal(t *testing.T) {
	for _, v := range []any{nil, true, 0.0, math.Copysign(0, -1), 1e21, 1e-7, "<a&b>\u2028", plainjsontest.ManyKeys(), plainjsontest.DeepValue(MaxDepth - 2),
		[]any(nil), map[string]any(nil), []any{map[string]any{}}} {
		want, err := json.Marshal(v)
		got, ok := Append(nil, v)
		if err != nil || !ok || string(got) != string(want) {
			t.Errorf("Append(%#v) = %s, %v; json.Marshal: %s, %v", v, got, ok, want, err)
		}
		want, err = marshalUnescaped(v)
		got, ok = AppendUnescaped(nil, v)
		if err != nil || !ok || string(got) != string(want) {
			t.Errorf("AppendUnescaped(%#v) = %s, %v; unescaped encoder: %s, %v", v, got, ok, want, err)
		}
	}
	if got, _ := AppendUnescaped(nil, map[string]any{"<k>": "a < b && c > d"}); string(got) != `{"<k>":"a < b && c > d"}` {
		t.Errorf("AppendUnescaped kept HTML escapes: %s", got)
	}
	for _, v := range []any{plainjsontest.DeepValue(MaxDepth + 2), int64(1), json.Number("1"), math.Inf(1), []any{math.NaN()},
		map[string]string{"a": "b"}} {
		if _, ok := Append(nil, v); ok {
			t.Errorf("Append(%#v) encoded a value it should leave to json.Marshal", v)
		}
		if _, ok := AppendUnescaped(nil, v); ok {
			t.Errorf("AppendUnescaped(%#v) encoded a value it should leave to encoding/json", v)
		}
	}
}

// FuzzAppendLikeMarshal: every value json.Unmarshal makes of the input is encoded
// byte for byte as json.Marshal encodes it (or, nested past MaxDepth, refused), and
// by AppendUnescaped as an encoder without HTML escaping does.
func FuzzAppendLikeMarshal(f *testing.F) {
	for _, s := range []string{`{"text":"hello","n":1.5e-7,"l":[null,true,"<\u2028>"]}`, `"\ud800"`, `1e21`, `[{"":{}}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		want, err := json.Marshal(v)
		got, ok := Append(nil, v)
		if !ok {
			return // nesting past MaxDepth: json.Marshal's business
		}
		if err != nil || string(got) != string(want) {
			t.Fatalf("Append(%#v) = %s; json.Marshal: %s, %v", v, got, want, err)
		}
		want, err = marshalUnescaped(v)
		got, ok = AppendUnescaped(nil, v)
		if err != nil || !ok || string(got) != string(want) {
			t.Fatalf("AppendUnescaped(%#v) = %s, %v; unescaped encoder: %s, %v", v, got, ok, want, err)
		}
	})
}
