package starlang

// rewriteConcat turns Starlang's `++` concatenation operator into Starlark's `+`.
//
// The rewrite is done on the source text rather than in a forked parser so that the
// rest of the dialect is exactly go.starlark.net. It replaces every `++` token outside
// string literals and comments by `+` followed by a space, and `++=` by `+=` followed by
// a space: the result has the same length and the same line and column for every other
// character, so positions reported by the Starlark parser and interpreter stay valid
// for the original source.
//
// Matching is greedy from left to right: `a +++b` is `a ++ +b`. Only adjacent pluses
// form the operator, so Starlark's `a + +b` (a space between the signs) keeps its
// meaning. For numbers `a++b` means the same in both languages (`a + (+b)` in Starlark).
//
// String literals are skipped with the scanning rules of go.starlark.net: single,
// double and triple quotes, with a backslash escaping the next character in every
// kind of literal, raw (r'…') and bytes (b'…') included, since in Starlark a raw
// string's `\"` does not end the literal either. A single-quoted literal that reaches
// the end of its line is unterminated; scanning resumes on the next line and the
// parser reports the error.
func rewriteConcat(src string) string {
	b := []byte(src)
	changed := false
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '#':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			i = skipString(b, i)
		case c == '+' && i+1 < len(b) && b[i+1] == '+':
			changed = true
			if i+2 < len(b) && b[i+2] == '=' {
				b[i+1], b[i+2] = '=', ' '
				i += 3
			} else {
				b[i+1] = ' '
				i += 2
			}
		default:
			i++
		}
	}
	if !changed {
		return src
	}
	return string(b)
}

// skipString returns the index just past the string literal whose opening quote is at b[i].
func skipString(b []byte, i int) int {
	q := b[i]
	if i+2 < len(b) && b[i+1] == q && b[i+2] == q {
		i += 3
		run := 0
		for i < len(b) {
			c := b[i]
			i++
			switch {
			case c == '\\':
				i++ // the escaped character never ends the literal
				run = 0
			case c == q:
				run++
				if run == 3 {
					return i
				}
			default:
				run = 0
			}
		}
		return len(b)
	}
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '\\':
			i += 2 // as in go.starlark.net, even an escaped newline continues the literal
		case c == q:
			return i + 1
		case c == '\n':
			return i
		default:
			i++
		}
	}
	return len(b)
}
