package starlang

import (
	"context"
	"strings"
	"testing"
)

// compileError compiles src as a script starting at helix.yaml:10:13 and returns
// its error text.
func compileError(t *testing.T, src string) string {
	t.Helper()
	_, err := Compile("helix.yaml", 10, 13, src, nil)
	if err == nil {
		t.Fatalf("Compile(%q) succeeded, want an error", src)
	}
	return err.Error()
}

// Syntax errors point at the token that is wrong: an unclosed bracket at the
// bracket that was opened, not at wherever the parser gave up.
func TestSyntaxErrorsPointAtTheCause(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // prefix of the error; the script starts at helix.yaml:10:13
	}{
		{"unclosed paren", "name = payload.get(\"name\", \"World\"\n{\"greeting\": name}\n",
			"helix.yaml:10:31: unclosed '(' (opened here, never closed before the end of the script)"},
		{"unclosed bracket", "x = [1,\n  2\ny = 3\n",
			"helix.yaml:10:17: unclosed '[' (opened here, never closed before the end of the script)"},
		{"unclosed brace", "x = {\"a\": 1\ny = 2\n",
			"helix.yaml:10:17: unclosed '{' (opened here, never closed before the end of the script)"},
		{"unclosed inner", "x = f(g(1, 2)\nz = 1\n",
			"helix.yaml:10:18: unclosed '(' (opened here, never closed before the end of the script)"},
		{"unclosed at end", "x = 1\ny = len(x",
			"helix.yaml:11:20: unclosed '(' (opened here, never closed before the end of the script)"},
		{"wrong closer", "x = f(1, 2]\n",
			"helix.yaml:10:23: ']' does not close the '(' opened at 10:18"},
		{"closer without opener", "x = 1)\n",
			"helix.yaml:10:18: unexpected ')': no bracket is open here"},
		{"unterminated string", "x = \"abc\ny = 1\n",
			"helix.yaml:10:17: unterminated string: the \" opened here is not closed on its line"},
		{"unterminated string in call", "x = f(\"abc)\ny = 1\n",
			"helix.yaml:10:19: unterminated string: the \" opened here is not closed on its line"},
		{"unterminated triple-quoted", "x = '''abc\ny = 1\n",
			"helix.yaml:10:17: unterminated string: the ''' opened here is never closed"},
		{"deeper indentation", "if True:\n  x = 1\n    y = 2\n",
			"helix.yaml:12:17: unexpected indentation: this line is indented more than the line before it"},
		{"indentation of no block", "if True:\n    x = 1\n  y = 2\n",
			"helix.yaml:12:15: this line's indentation matches no enclosing block"},
		{"unexpected token", "x = 1 2\n",
			"helix.yaml:10:19: unexpected number 2 (expected the end of the line)"},
		{"unexpected name", "x = 1\ny = x z\n",
			"helix.yaml:11:19: unexpected name z (expected the end of the line)"},
		{"missing value", "x = 1 +* 2",
			"helix.yaml:10:20: unexpected '*' (expected a value)"},
		{"missing colon", "if x\n  y = 1\n",
			"helix.yaml:10:17: unexpected end of line (expected ':')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compileError(t, tt.src); !strings.HasPrefix(got, tt.want) {
				t.Errorf("got  %s\nwant %s…", got, tt.want)
			}
		})
	}
}

// Python habits get a hint that names Starlang's way.
func TestPythonHabitsGetAHint(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // prefix, then parts of the hint
	}{
		{"f-string", "name = 'x'\ngreeting = f\"Hello {name}\"\n",
			[]string{"helix.yaml:11:24: f-strings are not supported", `"Hello %s" % name`, `"Hello {}".format(name)`}},
		{"f-string in call", "print(f'{payload}')",
			[]string{"helix.yaml:10:19: f-strings are not supported"}},
		{"import", "import json\njson.encode(payload)\n",
			[]string{"helix.yaml:10:13: import is not supported", "json", "math", "time", "content", "load"}},
		{"from import", "from math import sqrt\n",
			[]string{"helix.yaml:10:13: import is not supported"}},
		{"try", "try:\n  x = payload['a']\nexcept KeyError:\n  x = None\n",
			[]string{"helix.yaml:10:13: Starlang has no exceptions (try/except)", "payload.get(", "fail("}},
		{"raise", "raise ValueError('bad')\n",
			[]string{"helix.yaml:10:13: raise is not supported", `fail("`}},
		{"class", "class Order:\n  pass\n",
			[]string{"helix.yaml:10:13: Starlang has no classes", "dict", "def"}},
		{"is None", "x = payload\nx is None\n",
			[]string{"helix.yaml:11:15: 'is' is not supported", "x == None"}},
		{"is not", "x = payload if payload is not None else {}\n",
			[]string{"helix.yaml:10:36: 'is' is not supported", "!="}},
		{"assert", "assert payload != None\n",
			[]string{"helix.yaml:10:13: assert is not supported", `fail("`}},
		{"del", "del payload['a']\n",
			[]string{"helix.yaml:10:13: del is not supported", ".pop("}},
		{"not", "x = !payload\n",
			[]string{"helix.yaml:10:17: '!' is not an operator in Starlang", "not payload"}},
		{"and", "x = payload && True\n",
			[]string{"helix.yaml:10:25: '&&' is not an operator in Starlang", "and"}},
		{"or", "x = payload || True\n",
			[]string{"helix.yaml:10:25: '||' is not an operator in Starlang", "or"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compileError(t, tt.src)
			if !strings.HasPrefix(got, tt.want[0]) {
				t.Errorf("got  %s\nwant %s…", got, tt.want[0])
			}
			for _, part := range tt.want[1:] {
				if !strings.Contains(got, part) {
					t.Errorf("%s\ndoes not mention %s", got, part)
				}
			}
		})
	}
}

// The ways the hints name work in Starlang, and the Python features Starlang has
// get no hint.
func TestHintedAlternativesWork(t *testing.T) {
	src := `name = "Ada"
a = "Hello %s" % name
b = "Hello {}".format(name)
c = json.encode({"n": math.sqrt(4)})
d = (lambda v: v * 2)(3)
e = payload.get("missing", "default")
f = [i for i in range(3) if i != 1]
n = 0
while n < 3:
    n += 1
t = time.now()
{"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "n": n, "x": payload.pop("x"), "none": None == None, "ne": 1 != 2}
`
	s := compile(t, src, nil)
	res, err := s.Eval(context.Background(), input{body: map[string]any{"x": 1}}.exchange())
	if err != nil {
		t.Fatal(err)
	}
	got := res.Value.(map[string]any)
	if got["a"] != "Hello Ada" || got["b"] != "Hello Ada" || got["c"] != `{"n":2.0}` || got["d"] != int64(6) || got["e"] != "default" || got["n"] != int64(3) {
		t.Errorf("got %v", got)
	}
	_, err = compile(t, `fail("stop")`, nil).Eval(context.Background(), input{}.exchange())
	if err == nil || !strings.Contains(err.Error(), "stop") {
		t.Errorf("fail: %v", err)
	}
}

// Hostile and odd scripts get an error, never a panic, and the error is located in
// the script.
func TestSyntaxErrorsOnOddInput(t *testing.T) {
	for _, src := range []string{
		"(", ")", "[}", "{", "'", `"""`, "'''\n", "f'", "x = \\", "\\\n(", "é = (", "x = 'é\n(",
		"\r\n(\r\n", "\xff\xfe(", "#(\n(", "x = 0x\n(", "1e+", "x = (\n\n\n", "if x:\nelse:",
		"assert(x) +", "x = 1 is", "import", "f\"\"\"a\n(", "x = rb'a' f'b'", "\t\tx = 1\n\t  y", strings.Repeat("(", 10000),
	} {
		_, err := Compile("helix.yaml", 10, 13, src, nil)
		if err == nil {
			t.Errorf("%q compiled", src)
			continue
		}
		if !strings.HasPrefix(err.Error(), "helix.yaml:") {
			t.Errorf("%q: error without a position: %v", src, err)
		}
	}
}
