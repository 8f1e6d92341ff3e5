package fastrelay

import (
	"encoding/json"
	"testing"
)

// FuzzCanonical holds Canonical to what encoding/json writes for a
// json.RawMessage, and to returning its input when nothing changes.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		` { "a" : [ 1 , 2 ] } `,
		`{"a":"<b>&amp;\u2028\u2029"}`,
		"{\"a\":\"\u2028 raw\"}",
		`{"a":"\"\\\" \t"}`,
		`"x"`, `[]`, `{"s":"a b","t":"\n"}`,
		"{\"a\":\"\xe2\x80\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		got := Canonical(raw)
		if string(got) != string(want) {
			t.Fatalf("Canonical(%q) = %q, want %q", raw, got, want)
		}
		if string(want) == string(raw) && &got[0] != &raw[0] {
			t.Fatalf("Canonical(%q) copied a canonical input", raw)
		}
	})
}
