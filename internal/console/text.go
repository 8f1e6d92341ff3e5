package console

import (
	"strings"
	"unicode/utf8"
)

// Cut returns at most the first n bytes of s, never splitting a UTF-8
// character: the pages and the recorders bound every text they keep or show
// with it.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Clip bounds a value shown on a page (an id, a query parameter, a snippet):
// invalid UTF-8 replaced, cut by [Cut] with "…" where it was cut.
func Clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + "…"
}
