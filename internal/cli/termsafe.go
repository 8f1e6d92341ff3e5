package cli

import (
	"strings"
	"unicode/utf8"
)

// terminalSafe returns s without terminal control sequences, for printing text
// an MCP server sent (tool names, descriptions, results, errors) to a terminal:
// a server must not be able to clear the screen, move the cursor, set the window
// title or the clipboard, or hide text behind hyperlinks. It removes ESC sequences
// (CSI "ESC [ … final", OSC "ESC ] … BEL or ST", string sequences DCS/SOS/PM/APC and
// two-byte ones), their one-character C1 forms (U+009B CSI, U+009D OSC, …), and every
// other C0 or C1 control and DEL, keeping \n and \t. Bytes that are not UTF-8 are
// dropped too (a lone 0x9B byte is CSI to some terminals).
func terminalSafe(s string) string {
	if !hasControl(s) {
		return s // the common case: no copy
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			i++
		case r == 0x1b:
			i = skipEscape(s, i+1)
		case r == 0x9b: // C1 CSI
			i = skipCSI(s, i+size)
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // C1 OSC, DCS, SOS, PM, APC
			i = skipString(s, i+size)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
			i += size
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			i += size
		default:
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

// hasControl reports whether s holds a control character other than \n and \t, or
// bytes that are not UTF-8.
func hasControl(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
			return true
		}
	}
	return false
}

// skipEscape returns the index after the escape sequence whose ESC ended before i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: a string up to ST or BEL
		return skipString(s, i+1)
	}
	// A two-byte sequence (ESC 7, ESC c, …); intermediates 0x20-0x2F come first.
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI returns the index after a CSI's parameters, intermediates and final
// byte (0x40-0x7E), starting at i; it stops at anything else.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns the index after a control string starting at i, ended by
// BEL, ESC \ or the C1 ST (U+009C); an unterminated one runs to the end of s.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

// safeError shows err through terminalSafe: errors of MCP calls quote what the server
// answered. errors.Is and errors.As still see err.
func safeError(err error) error {
	if err == nil {
		return nil
	}
	return terminalSafeError{err}
}

type terminalSafeError struct{ err error }

func (e terminalSafeError) Error() string { return terminalSafe(e.err.Error()) }
func (e terminalSafeError) Unwrap() error { return e.err }
