package starlang

import "testing"

func TestRewriteConcat(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"strings", `"a" ++ "b"`, `"a" +  "b"`},
		{"no spaces", `a++b`, `a+ b`},
		{"augmented", `x ++= [1]`, `x +=  [1]`},
		{"starlark unary plus untouched", `a + +b`, `a + +b`},
		{"greedy triple plus", `a +++b`, `a + +b`},
		{"inside double quotes", `"x ++ y" ++ z`, `"x ++ y" +  z`},
		{"inside single quotes", `'x ++ y' ++ z`, `'x ++ y' +  z`},
		{"escaped quote", `"a\" ++ b" ++ c`, `"a\" ++ b" +  c`},
		{"raw string escaped quote", `r"a\" ++ b" ++ c`, `r"a\" ++ b" +  c`},
		{"bytes literal", `b'++' ++ c`, `b'++' +  c`},
		{"triple double", "\"\"\"a ++ \"b\" ++\n c\"\"\" ++ d", "\"\"\"a ++ \"b\" ++\n c\"\"\" +  d"},
		{"triple single", "'''it's ++ ok''' ++ d", "'''it's ++ ok''' +  d"},
		{"triple with escaped quotes", `"""a\""" ++ """ ++ b`, `"""a\""" ++ """ +  b`},
		{"comment", "x = a ++ b # c ++ d\ny ++ z", "x = a +  b # c ++ d\ny +  z"},
		{"quote in comment", "# don't ++\na ++ b", "# don't ++\na +  b"},
		{"hash in string", `"#" ++ a`, `"#" +  a`},
		{"unterminated string ends at newline", "'abc ++\nx ++ y", "'abc ++\nx +  y"},
		{"escaped newline continues string", "'a\\\n ++ b' ++ c", "'a\\\n ++ b' +  c"},
		{"nothing to do", `a + b`, `a + b`},
		{"trailing plus", `a +`, `a +`},
		{"unterminated triple", `"""abc ++`, `"""abc ++`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rewriteConcat(tt.src)
			if got != tt.want {
				t.Errorf("rewriteConcat(%q) = %q, want %q", tt.src, got, tt.want)
			}
			if len(got) != len(tt.src) {
				t.Errorf("rewrite changed the length: %d → %d (positions would shift)", len(tt.src), len(got))
			}
		})
	}
}
