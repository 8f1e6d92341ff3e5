package starlang

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/exchange"
)

// docExample is one ```python block of docs/starlang.md and the result line after it:
// "→ `JSON`" (the script's value), "→ body `JSON`" (the body after the script) or
// "→ error `text`" (the compile or run error contains text).
type docExample struct {
	line    int
	payload string
	src     string
	kind    string // "", "body" or "error"
	want    string
}

var docExampleRE = regexp.MustCompile("(?ms)^```python\n(.*?)^```\n→ (?:(body|error) )?`(.*?)`$")

func docExamples(t *testing.T) []docExample {
	t.Helper()
	raw, err := os.ReadFile("../../docs/starlang.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if n, found := strings.Count(text, "```python\n"), len(docExampleRE.FindAllString(text, -1)); n != found {
		t.Fatalf("docs/starlang.md has %d python blocks but %d with a result line (→ `…`, → body `…` or → error `…`) after them", n, found)
	}
	var out []docExample
	for _, m := range docExampleRE.FindAllStringSubmatchIndex(text, -1) {
		ex := docExample{line: strings.Count(text[:m[0]], "\n") + 2, src: text[m[2]:m[3]], want: text[m[6]:m[7]]}
		if m[4] >= 0 {
			ex.kind = text[m[4]:m[5]]
		}
		if first, rest, ok := strings.Cut(ex.src, "\n"); ok && strings.HasPrefix(first, "# payload: ") {
			ex.payload, ex.src = strings.TrimPrefix(first, "# payload: "), rest
			ex.line++
		}
		out = append(out, ex)
	}
	return out
}

// wantJSON re-encodes the JSON text of a result line, and gotJSON a Go value, so that
// equal values compare equal (key order, 2 and 2.0).
func wantJSON(t *testing.T, text string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("result line %s is not JSON: %v", text, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func gotJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("result %#v: %v", v, err)
	}
	return wantJSON(t, string(b))
}

// Every example of docs/starlang.md runs as printed and gives the result printed under
// it: a value, the body, or an error. The docs cannot drift from the language.
func TestStarlangDocExamplesRun(t *testing.T) {
	examples := docExamples(t)
	if len(examples) < 10 {
		t.Fatalf("only %d examples found in docs/starlang.md", len(examples))
	}
	for _, d := range examples {
		ex := exchange.NewWithBody(exchange.InOut, nil)
		if d.payload != "" {
			var body any
			if err := json.Unmarshal([]byte(d.payload), &body); err != nil {
				t.Errorf("starlang.md:%d: payload %s: %v", d.line-1, d.payload, err)
				continue
			}
			ex.In().SetBody(body)
		}
		script, err := Compile("starlang.md", d.line, 1, d.src, nil)
		var res *Result
		if err == nil {
			res, err = script.Eval(context.Background(), ex)
		}
		switch {
		case d.kind == "error":
			if err == nil || !strings.Contains(err.Error(), d.want) {
				t.Errorf("starlang.md:%d: want an error containing %q, got %v", d.line, d.want, err)
			}
		case err != nil:
			t.Errorf("starlang.md:%d: %v", d.line, err)
		case d.kind == "body":
			if got, want := gotJSON(t, ex.In().Body()), wantJSON(t, d.want); got != want && !(res.Payload != nil && gotJSON(t, res.Payload) == want) {
				t.Errorf("starlang.md:%d: body %s, doc says %s", d.line, got, want)
			}
		default:
			if got, want := gotJSON(t, res.Value), wantJSON(t, d.want); got != want {
				t.Errorf("starlang.md:%d: value %s, doc says %s", d.line, got, want)
			}
		}
	}
}
