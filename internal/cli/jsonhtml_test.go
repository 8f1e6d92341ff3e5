package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestUnescapeHTML(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"text":"a \u003c b \u0026\u0026 c \u003e d"}`: `{"text":"a < b && c > d"}`,
		`{"k\u003C":"\u003E"}`:                          `{"k<":">"}`,
		`"\\u003c"`:                                     `"\\u003c"`, // an escaped backslash, then plain text
		`"\\\u003c"`:                                    `"\\<"`,
		`"\"\u0026\""`:                                  `"\"&\""`,
		`"\u2028\n\u0000"`:                              `"\u2028\n\u0000"`,
		`[1,true,null,"x"]`:                             `[1,true,null,"x"]`,
		`"\u003"`:                                       `"\u003"`, // not valid JSON: copied as is
	} {
		if got := string(unescapeHTML([]byte(in))); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
	}
}

// Whatever valid JSON goes in, the same value comes out, with no HTML escape left.
func FuzzUnescapeHTML(f *testing.F) {
	for _, s := range []string{`{"a":"<&>"}`, `["\\u003c","\"<"]`, `{"<k>":[1,{"x":"&amp;"}]}`, `"\\\\\u0026"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		escaped, err := json.Marshal(v) // HTML-escaped, as the go-sdk writes
		if err != nil {
			return
		}
		out := unescapeHTML(escaped)
		var back any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("unescapeHTML(%s) = %s: not JSON: %v", escaped, out, err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Fatalf("unescapeHTML(%s) = %s: value changed", escaped, out)
		}
		for _, e := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(strings.ReplaceAll(string(out), `\\`, ``), e) {
				t.Fatalf("unescapeHTML(%s) = %s: %s left", escaped, out, e)
			}
		}
	})
}
