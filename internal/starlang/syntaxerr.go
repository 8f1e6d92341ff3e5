package starlang

import (
	"fmt"
	"strings"
)

// This file turns go.starlark.net's syntax errors into messages for someone who
// may be writing their first script: at the token that is wrong (the parser
// reports the position after it), at the bracket left open rather than where the
// parser gave up, in words rather than token names, and with a hint naming
// Starlang's way when the script is written as Python would be.

// syntaxProblem is a syntax error explained: where, in script coordinates, and what.
type syntaxProblem struct {
	at  lexPos
	msg string
}

// explainSyntaxError explains the error go.starlark.net reported at position at
// with message msg while parsing code. where renders a script position for the
// message, as the user sees it ("12:9" in the YAML file).
func explainSyntaxError(code string, at lexPos, msg string, where func(lexPos) string) syntaxProblem {
	toks := scanTokens(code)
	if strings.HasSuffix(msg, " in string") {
		return explainString(toks, at)
	}
	if p, ok := explainBrackets(toks, at, where); ok {
		return p
	}
	got, ok := offendingToken(toks, at, msg)
	if ok {
		if p, ok := pythonHabit(toks, got); ok {
			return p
		}
	}
	// Python's keywords and operators are errors wherever they are, and the parser
	// may stop a little after one (x if x is not None: at the missing else).
	for i, t := range toks {
		if t.start.line > at.line {
			break
		}
		if p, ok := pythonHabit(toks, i); ok {
			return p
		}
	}
	if ok {
		at = toks[got].start
	}
	return syntaxProblem{at: at, msg: reword(msg, toks, got, ok)}
}

// explainString explains an unterminated string, reported at its opening quote.
func explainString(toks []token, at lexPos) syntaxProblem {
	quote := `"`
	for _, t := range toks {
		if t.kind == tokString && t.start == at {
			quote = t.quote
		}
	}
	if len(quote) == 3 {
		return syntaxProblem{at: at, msg: fmt.Sprintf("unterminated string: the %s opened here is never closed (close it with %s)", quote, quote)}
	}
	return syntaxProblem{at: at, msg: fmt.Sprintf(
		"unterminated string: the %s opened here is not closed on its line (close it with %s; for text over several lines use \"\"\"…\"\"\")",
		quote, quote)}
}

var closerOf = map[string]string{"(": ")", "[": "]", "{": "}"}

// explainBrackets finds a bracket problem at or before the error: a closing
// bracket that closes nothing or the wrong bracket, or a bracket opened before the
// error and never closed. Such a bracket is why the parser went wrong, wherever it
// noticed.
func explainBrackets(toks []token, at lexPos, where func(lexPos) string) (syntaxProblem, bool) {
	var open []token
	for _, t := range toks {
		if at.before(t.start) && len(open) == 0 {
			return syntaxProblem{}, false // nothing open before the error: the cause is elsewhere
		}
		switch t.kind {
		case tokOpen:
			open = append(open, t)
		case tokClose:
			if t.start.before(at) || t.start == at {
				if len(open) == 0 {
					return syntaxProblem{at: t.start, msg: fmt.Sprintf("unexpected '%s': no bracket is open here", t.text)}, true
				}
				if o := open[len(open)-1]; closerOf[o.text] != t.text {
					return syntaxProblem{at: t.start, msg: fmt.Sprintf("'%s' does not close the '%s' opened at %s: close that one with '%s' first",
						t.text, o.text, where(o.start), closerOf[o.text])}, true
				}
			}
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
	// The innermost bracket opened before the error and still open at the end.
	for i := len(open) - 1; i >= 0; i-- {
		if o := open[i]; o.start.before(at) {
			return syntaxProblem{at: o.start, msg: fmt.Sprintf(
				"unclosed '%s' (opened here, never closed before the end of the script): add the '%s' where its contents end",
				o.text, closerOf[o.text])}, true
		}
	}
	return syntaxProblem{}, false
}

// offendingToken finds the token the parser stopped at. Errors of the form "got X,
// want Y" are reported just after X, except "want primary expression", reported
// at X; scanner errors are reported at the character. ok is false when no token
// is there (the end of the script).
func offendingToken(toks []token, at lexPos, msg string) (int, bool) {
	afterToken := strings.HasPrefix(msg, "got ") && !strings.HasSuffix(msg, "want primary expression")
	for i, t := range toks {
		if afterToken && t.end == at || !afterToken && !at.before(t.start) && at.before(t.end) {
			return i, true
		}
	}
	return 0, false
}

// pythonHabit recognises Python written where Starlang differs, at token i, and
// says what to write instead. Every alternative it names works in Starlang (see
// TestHintedAlternativesWork).
func pythonHabit(toks []token, i int) (syntaxProblem, bool) {
	t := toks[i]
	if t.kind == tokString && i > 0 && isFStringPrefix(toks[i-1]) && toks[i-1].end == t.start {
		return syntaxProblem{at: toks[i-1].start, msg: `f-strings are not supported: write "Hello %s" % name or "Hello {}".format(name)`}, true
	}
	if i > 0 && toks[i-1].text == "assert" && (i == 1 || toks[i-2].kind == tokEnd) && t.kind != tokOpen && t.kind != tokOperator {
		return syntaxProblem{at: toks[i-1].start, msg: `assert is not supported: write if not condition: fail("message")`}, true
	}
	if msg, ok := pythonWords[t.text]; ok && t.kind == tokName {
		return syntaxProblem{at: t.start, msg: msg}, true
	}
	switch t.text {
	case "!":
		operand := "x"
		if i+1 < len(toks) && toks[i+1].kind == tokName {
			operand = toks[i+1].text
		}
		return syntaxProblem{at: t.start, msg: fmt.Sprintf("'!' is not an operator in Starlang: write not %s (and != for \"not equal\")", operand)}, true
	case "&&":
		return syntaxProblem{at: t.start, msg: "'&&' is not an operator in Starlang: use and"}, true
	case "||":
		return syntaxProblem{at: t.start, msg: "'||' is not an operator in Starlang: use or"}, true
	}
	return syntaxProblem{}, false
}

func isFStringPrefix(t token) bool {
	if t.kind != tokName || len(t.text) > 2 {
		return false
	}
	lower := strings.ToLower(t.text)
	return lower == "f" || lower == "rf" || lower == "fr"
}

// pythonWords are Python keywords Starlark reserves without giving them a meaning.
var pythonWords = func() map[string]string {
	const imports = "import is not supported: the modules json, math and time (and content, for tool answers) " +
		"are there without importing, as in json.encode(payload); a script cannot load other files (load() is not supported either)"
	const exceptions = "Starlang has no exceptions (try/except): check before using a value " +
		`(payload.get("key", default), if "key" in payload: …) and stop the script with fail("message")`
	return map[string]string{
		"import":  imports,
		"from":    imports,
		"try":     exceptions,
		"except":  exceptions,
		"finally": exceptions,
		"raise":   `raise is not supported: stop the script with fail("message")`,
		"class":   `Starlang has no classes: keep data in a dict ({"name": name}) and write functions with def`,
		"is":      "'is' is not supported: compare with == and != (x == None, x != None)",
		"del":     `del is not supported: remove a key with payload.pop("key") (or d.pop(key, None) when it may be missing)`,
	}
}()

// reword says a parser message in words: "got int literal, want newline" becomes
// "unexpected number 2 (expected the end of the line)".
func reword(msg string, toks []token, i int, haveToken bool) string {
	switch {
	case strings.HasPrefix(msg, "got indent,") && haveToken && i == 0:
		return "unexpected indentation: the first line of a script must not be indented"
	case strings.HasPrefix(msg, "got indent,"):
		return "unexpected indentation: this line is indented more than the line before it, " +
			"which does not open a block (only a line ending in ':' does)"
	case strings.HasPrefix(msg, "unindent does not match"):
		return "this line's indentation matches no enclosing block: indent it exactly as the other lines " +
			"of its block, or as the if/for/def line the block belongs to"
	}
	rest, ok := strings.CutPrefix(msg, "got ")
	if !ok {
		return msg
	}
	got, want, ok := strings.Cut(rest, ", want ")
	if !ok {
		return msg
	}
	text := ""
	if haveToken {
		text = toks[i].text
	}
	return fmt.Sprintf("unexpected %s (expected %s)", describeGot(got, text), describeWant(want))
}

func describeGot(got, text string) string {
	const maxText = 30
	if len(text) > maxText {
		text = text[:maxText] + "…"
	}
	switch got {
	case "identifier":
		return "name " + text
	case "int literal", "float literal":
		return "number " + text
	case "string literal", "bytes literal":
		return "string " + text
	case "newline":
		return "end of line"
	case "end of file":
		return "end of script"
	case "outdent":
		return "end of the block"
	}
	if strings.HasPrefix(got, "'") {
		return got
	}
	return "'" + got + "'" // a keyword
}

func describeWant(want string) string {
	switch want {
	case "primary expression":
		return "a value"
	case "newline":
		return "the end of the line"
	case "end of file":
		return "the end of the script"
	case "identifier":
		return "a name"
	case "indent":
		return "an indented block"
	}
	return want
}
