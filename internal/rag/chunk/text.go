package chunk

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// span is a half-open byte range [start, end) of a document's text.
type span struct{ start, end int }

// isSpace reports whether r separates words. Invalid UTF-8 decodes to
// utf8.RuneError, which is not a space: it counts as a symbol.
func isSpace(r rune) bool { return unicode.IsSpace(r) }

// isCJK reports whether r belongs to a script written without spaces between
// words, where every character is roughly one token of a subword tokenizer and
// a boundary between two characters is as good as a word boundary.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// isWordRune reports whether r continues a run of letters and digits.
func isWordRune(r rune) bool {
	if isCJK(r) {
		return false
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
}

// joinsPrevious reports whether r is glued to the rune before it in the same
// visible character: combining marks, variation selectors, emoji skin tones and
// the zero-width joiner, so that no chunk boundary separates them.
func joinsPrevious(r rune) bool {
	return unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) ||
		r == '\u200d' || (r >= 0x1F3FB && r <= 0x1F3FF) || (r >= 0xE0020 && r <= 0xE007F)
}

// token is one unit of the "tokens" unit.
type token struct {
	span
	cjk bool // a single CJK character: a boundary after it is a word boundary
}

// nextToken returns the token starting at or after byte i of s, and ok=false at
// the end. A token approximates a subword tokenizer's token without a
// vocabulary: a run of letters and digits (outside CJK scripts), one CJK
// character, or one other visible character (punctuation, symbol, emoji with its
// modifiers). Whitespace is never part of a token.
func nextToken(s string, i int) (token, bool) {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isSpace(r) {
			break
		}
		i += n
	}
	if i >= len(s) {
		return token{}, false
	}
	start := i
	r, n := utf8.DecodeRuneInString(s[i:])
	i += n
	switch {
	case isCJK(r):
		return token{span{start, i}, true}, true
	case isWordRune(r):
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !isWordRune(r) && !joinsPrevious(r) {
				break
			}
			i += n
		}
	default:
		// A symbol with what is glued to it; after a zero-width joiner the
		// next rune belongs to the same emoji sequence.
		joined := false
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if joined && !isSpace(r) {
				joined = false
				i += n
				continue
			}
			if !joinsPrevious(r) {
				break
			}
			joined = r == '\u200d'
			i += n
		}
	}
	return token{span{start, i}, false}, true
}

// tokens lists the tokens of s[sp.start:sp.end], with offsets into s.
func tokens(s string, sp span) []token {
	var out []token
	sub := s[:sp.end]
	for i := sp.start; ; {
		t, ok := nextToken(sub, i)
		if !ok {
			return out
		}
		out = append(out, t)
		i = t.end
	}
}

// countTokens counts the tokens of s.
func countTokens(s string) int {
	n := 0
	for i := 0; ; {
		t, ok := nextToken(s, i)
		if !ok {
			return n
		}
		n++
		i = t.end
	}
}

// trim shrinks sp to exclude leading and trailing whitespace; the result is
// empty (start == end) when sp holds only whitespace.
func trim(s string, sp span) span {
	for sp.start < sp.end {
		r, n := utf8.DecodeRuneInString(s[sp.start:sp.end])
		if !isSpace(r) {
			break
		}
		sp.start += n
	}
	for sp.end > sp.start {
		r, n := utf8.DecodeLastRuneInString(s[sp.start:sp.end])
		if !isSpace(r) {
			break
		}
		sp.end -= n
	}
	return sp
}

// splitAtBlankLines cuts sp at runs of whitespace holding two or more line
// breaks (paragraph boundaries; "\r\n" counts as one), returning the trimmed
// non-empty pieces.
func splitAtBlankLines(s string, sp span) []span {
	return splitAtGaps(s, sp, func(gap string) bool {
		return strings.Count(gap, "\n")+strings.Count(strings.ReplaceAll(gap, "\r\n", ""), "\r") >= 2
	})
}

// splitAtLineBreaks cuts sp at every line break.
func splitAtLineBreaks(s string, sp span) []span {
	return splitAtGaps(s, sp, func(gap string) bool {
		return strings.ContainsAny(gap, "\n\r")
	})
}

// splitAtSpaces cuts sp at every run of whitespace: into words.
func splitAtSpaces(s string, sp span) []span {
	return splitAtGaps(s, sp, func(string) bool { return true })
}

// splitAtGaps cuts sp at the runs of whitespace for which cut returns true and
// returns the trimmed non-empty pieces.
func splitAtGaps(s string, sp span, cut func(gap string) bool) []span {
	var out []span
	pieceStart := sp.start
	i := sp.start
	for i < sp.end {
		r, n := utf8.DecodeRuneInString(s[i:sp.end])
		if !isSpace(r) {
			i += n
			continue
		}
		gapStart := i
		for i < sp.end {
			r, n := utf8.DecodeRuneInString(s[i:sp.end])
			if !isSpace(r) {
				break
			}
			i += n
		}
		if cut(s[gapStart:i]) {
			if p := trim(s, span{pieceStart, gapStart}); p.start < p.end {
				out = append(out, p)
			}
			pieceStart = i
		}
	}
	if p := trim(s, span{pieceStart, sp.end}); p.start < p.end {
		out = append(out, p)
	}
	return out
}

// splitRunes cuts sp into single runes, skipping whitespace: the last resort of
// the recursive splitter in the characters unit, where a word longer than the
// chunk size has to be cut somewhere (never inside a rune's UTF-8 bytes).
func splitRunes(s string, sp span) []span {
	var out []span
	for i := sp.start; i < sp.end; {
		r, n := utf8.DecodeRuneInString(s[i:sp.end])
		if !isSpace(r) {
			out = append(out, span{i, i + n})
		}
		i += n
	}
	return out
}
