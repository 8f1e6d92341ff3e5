package starlang

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file splits a script into coarse tokens — names, numbers, strings,
// brackets, operators — with their positions. go.starlark.net does not export its
// scanner, and its syntax errors give the position just after the token the parser
// stopped at, not the token itself nor the bracket left open further up: the
// tokens let syntaxerr.go find both. Lines and columns are counted the way
// go.starlark.net counts them (1-based, a column per character, "\r\n" one line
// end), so the two agree on every position.

type tokenKind int

const (
	tokName tokenKind = iota
	tokNumber
	tokString
	tokOpen  // ( [ {
	tokClose // ) ] }
	tokOperator
	tokEnd // a line end outside brackets, which ends a statement
)

// lexPos is a position in the script: line and column, 1-based.
type lexPos struct{ line, col int }

func (p lexPos) before(q lexPos) bool {
	return p.line < q.line || p.line == q.line && p.col < q.col
}

type token struct {
	kind       tokenKind
	text       string
	start, end lexPos // end is the position just after the token
	// quote is the opening quote of a string (' " ''' """); unterminated marks a
	// string that reaches the end of its line (or of the script, for ''').
	quote        string
	unterminated bool
}

// operators are Starlark's multi-character operators, longest first, plus the
// Python ones (&&, ||) that the hints look for.
var operators = []string{"//=", "<<=", ">>=", "**", "//", "==", "!=", "<=", ">=", "<<", ">>",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "&&", "||"}

// lexer walks a script rune by rune, keeping the position of the next rune.
type lexer struct {
	src   string
	i     int
	pos   lexPos
	depth int // open brackets: line ends inside brackets end no statement
	out   []token
}

func scanTokens(src string) []token {
	lx := &lexer{src: src, pos: lexPos{1, 1}}
	for lx.i < len(lx.src) {
		lx.next()
	}
	return lx.out
}

// peek returns the rune at byte offset i+k runes ahead, 0 past the end.
func (lx *lexer) peek(k int) rune {
	j := lx.i
	for ; k > 0 && j < len(lx.src); k-- {
		_, size := utf8.DecodeRuneInString(lx.src[j:])
		j += size
	}
	if j >= len(lx.src) {
		return 0
	}
	r, _ := utf8.DecodeRuneInString(lx.src[j:])
	return r
}

// advance consumes one rune ("\r\n" as one line end) and returns it.
func (lx *lexer) advance() rune {
	r, size := utf8.DecodeRuneInString(lx.src[lx.i:])
	lx.i += size
	if r == '\r' && lx.i < len(lx.src) && lx.src[lx.i] == '\n' {
		lx.i++
		r = '\n'
	}
	if r == '\n' || r == '\r' {
		lx.pos = lexPos{lx.pos.line + 1, 1}
		return '\n'
	}
	lx.pos.col++
	return r
}

func (lx *lexer) emit(kind tokenKind, startIdx int, start lexPos) *token {
	lx.out = append(lx.out, token{kind: kind, text: lx.src[startIdx:lx.i], start: start, end: lx.pos})
	return &lx.out[len(lx.out)-1]
}

func (lx *lexer) next() {
	startIdx, start := lx.i, lx.pos
	r := lx.peek(0)
	switch {
	case r == '\n' || r == '\r':
		lx.advance()
		if lx.depth == 0 {
			lx.emit(tokEnd, startIdx, start)
		}
	case r == ' ' || r == '\t' || r == '\f':
		lx.advance()
	case r == '\\' && (lx.peek(1) == '\n' || lx.peek(1) == '\r'):
		lx.advance() // a line continuation
		lx.advance()
	case r == '#':
		for lx.i < len(lx.src) && lx.peek(0) != '\n' && lx.peek(0) != '\r' {
			lx.advance()
		}
	case r == '\'' || r == '"':
		lx.scanString(startIdx, start)
	case r == '(' || r == '[' || r == '{':
		lx.advance()
		lx.depth++
		lx.emit(tokOpen, startIdx, start)
	case r == ')' || r == ']' || r == '}':
		lx.advance()
		lx.depth = max(0, lx.depth-1)
		lx.emit(tokClose, startIdx, start)
	case unicode.IsDigit(r) || r == '.' && unicode.IsDigit(lx.peek(1)):
		lx.scanNumber(startIdx, start)
	case r == '_' || unicode.IsLetter(r):
		for r := lx.peek(0); r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r); r = lx.peek(0) {
			lx.advance()
		}
		word := lx.src[startIdx:lx.i]
		if isStringPrefix(word) && (lx.peek(0) == '\'' || lx.peek(0) == '"') {
			lx.scanString(startIdx, start)
			return
		}
		lx.emit(tokName, startIdx, start)
	default:
		for _, op := range operators {
			if strings.HasPrefix(lx.src[lx.i:], op) {
				for range op {
					lx.advance()
				}
				lx.emit(tokOperator, startIdx, start)
				return
			}
		}
		lx.advance()
		lx.emit(tokOperator, startIdx, start)
	}
}

// isStringPrefix reports whether word before a quote makes one string literal with
// it in Starlark (r'…', b'…', rb'…'); f and other Python prefixes do not.
func isStringPrefix(word string) bool {
	switch word {
	case "r", "b", "rb", "br":
		return true
	}
	return false
}

// scanString consumes a string literal whose prefix (if any) starts at startIdx,
// with the escaping rules of skipString.
func (lx *lexer) scanString(startIdx int, start lexPos) {
	q := lx.peek(0)
	triple := lx.peek(1) == q && lx.peek(2) == q
	quote := string(q)
	if triple {
		quote = strings.Repeat(quote, 3)
	}
	for range quote {
		lx.advance()
	}
	closed := false
	for lx.i < len(lx.src) && !closed {
		c := lx.peek(0)
		switch {
		case c == '\\':
			lx.advance()
			if lx.i < len(lx.src) {
				lx.advance()
			}
		case !triple && (c == '\n' || c == '\r'):
			t := lx.emit(tokString, startIdx, start)
			t.quote, t.unterminated = quote, true
			return
		case strings.HasPrefix(lx.src[lx.i:], quote):
			for range quote {
				lx.advance()
			}
			closed = true
		default:
			lx.advance()
		}
	}
	t := lx.emit(tokString, startIdx, start)
	t.quote, t.unterminated = quote, !closed
}

// scanNumber consumes a number: digits, letters (0x1f, 1e5), dots and the sign of
// an exponent.
func (lx *lexer) scanNumber(startIdx int, start lexPos) {
	for {
		r := lx.peek(0)
		switch {
		case r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r):
			lx.advance()
		case (r == '+' || r == '-') && strings.ContainsAny(lx.src[lx.i-1:lx.i], "eE") && !strings.HasPrefix(lx.src[startIdx:], "0x"):
			lx.advance()
		default:
			lx.emit(tokNumber, startIdx, start)
			return
		}
	}
}
