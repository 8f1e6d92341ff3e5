package agent

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxSessionIDBytes is the longest session_id a run takes.
const MaxSessionIDBytes = 256

// How much of a caller's, model's or tool's text an error quotes: enough to
// recognise it, not enough to flood a log, a reply or the model's context.
const (
	maxQuotedName  = 64
	maxQuotedError = 300
	maxQuotedID    = 40
	// maxToolError bounds a tool's error result as the model sees it.
	maxToolError = 4096
)

// SessionOwner is whose session a session id names: the MCP server a call came
// through and the principal (API key, OAuth subject) it authenticated as. The
// zero value is the callers without a credential (open servers, HTTP triggers,
// workflows), who share their session ids; a caller with a principal never
// shares a session with one without, since memory is keyed by owner and id as
// separate fields, not by a string that joins them.
type SessionOwner struct {
	Server, Principal string
}

// sessionKey is a session's key in memory.
type sessionKey struct {
	owner SessionOwner
	id    string
}

// size is what the key adds to a session's bytes.
func (k sessionKey) size() int64 {
	return int64(len(k.owner.Server) + len(k.owner.Principal) + len(k.id))
}

// SessionIDError is a session_id a run refuses.
type SessionIDError struct {
	ID      string
	Problem string
}

func (e *SessionIDError) Error() string {
	return fmt.Sprintf("session_id %q %s; use at most %d bytes of printable text (letters, digits, punctuation, spaces)",
		Excerpt(e.ID, maxQuotedID), e.Problem, MaxSessionIDBytes)
}

// CheckSessionID reports a session id a run refuses: longer than
// MaxSessionIDBytes, not UTF-8, or holding a control character (such as NUL,
// newline or DEL), which has no business in an id and would let one id pass for
// another in logs and in anything that joins it with other text.
func CheckSessionID(id string) error {
	if len(id) > MaxSessionIDBytes {
		return &SessionIDError{ID: id, Problem: fmt.Sprintf("is %d bytes, more than %d", len(id), MaxSessionIDBytes)}
	}
	for i, r := range id {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(id[i:]); size == 1 {
				return &SessionIDError{ID: id, Problem: fmt.Sprintf("is not valid UTF-8 (at byte %d)", i)}
			}
		}
		if unicode.IsControl(r) {
			return &SessionIDError{ID: id, Problem: fmt.Sprintf("has a control character %U at byte %d", r, i)}
		}
	}
	return nil
}

// Excerpt is s cut to at most n bytes (at a character boundary), followed by its
// full length when it was cut: what an error quotes of text it does not control.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}
