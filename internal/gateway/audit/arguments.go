package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/redact"
)

// Settings of audit.arguments: what a record keeps of a call's arguments.
const (
	ArgumentsDigest   = "digest"   // the SHA-256 (hex) of the arguments only
	ArgumentsRedacted = "redacted" // the keys, and of each string value only its length
	ArgumentsFull     = "full"     // the arguments as received
	ArgumentsNone     = "none"     // nothing
)

// Bounds of what a record keeps, so that one call with megabytes of arguments
// or a long upstream error cannot make a record every sink refuses (Kafka's
// brokers take 1 MB by default) and stall the records behind it.
const (
	maxArgumentsBytes = 64 << 10
	maxErrorBytes     = 4 << 10
)

// applyArguments sets a record's Arguments and ArgumentsDigest from the raw
// arguments the core passed, as the setting says.
func applyArguments(setting string, raw json.RawMessage) (args json.RawMessage, digest string) {
	if setting == ArgumentsNone || len(raw) == 0 {
		return nil, ""
	}
	sum := sha256.Sum256(raw)
	digest = hex.EncodeToString(sum[:])
	if setting == ArgumentsFull || setting == ArgumentsRedacted {
		if len(raw) > maxArgumentsBytes {
			note, _ := json.Marshal(fmt.Sprintf("[%d bytes, more than the %d an audit record keeps; see arguments_digest]", len(raw), maxArgumentsBytes))
			return note, digest
		}
	}
	switch setting {
	case ArgumentsFull:
		if !json.Valid(raw) {
			// Arguments that are not JSON cannot sit in the record as they are.
			quoted, _ := json.Marshal(string(raw))
			return quoted, digest
		}
		return raw, digest
	case ArgumentsRedacted:
		return redactArguments(raw), digest
	}
	return nil, digest
}

// redactArguments keeps the shape of the arguments (keys, arrays, numbers,
// booleans) and replaces every string value with its length, so that an auditor
// sees what was sent without seeing what it said.
func redactArguments(raw json.RawMessage) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		out, _ := json.Marshal(fmt.Sprintf("[%d bytes, not JSON]", len(raw)))
		return out
	}
	out, err := json.Marshal(maskStrings(v))
	if err != nil {
		out, _ = json.Marshal(fmt.Sprintf("[%d bytes]", len(raw)))
	}
	return out
}

func maskStrings(v any) any {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("[%d chars]", utf8.RuneCountInString(x))
	case map[string]any:
		for k, e := range x {
			x[k] = maskStrings(e)
		}
	case []any:
		for i, e := range x {
			x[i] = maskStrings(e)
		}
	}
	return v
}

// bearerPattern matches an Authorization value carried in text.
var bearerPattern = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*`)

const hidden = "[redacted]"

// minTokenLen is the shortest caller token scrubRecord looks for: replacing a
// one-letter "token" would mangle the record and hide nothing.
const minTokenLen = 8

// scrubText hides credentials in free text (an error message): bearer and basic
// credentials, URL passwords and query values, and the process's known secrets;
// and cuts it to maxErrorBytes.
func scrubText(s string) string {
	if s == "" {
		return s
	}
	// Hidden first, cut after: a cut through a credential would leave a part of it.
	s = redact.Text(bearerPattern.ReplaceAllString(s, "$1 "+hidden))
	if len(s) > maxErrorBytes {
		cut := maxErrorBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + fmt.Sprintf(" … (%d bytes more)", len(s)-cut)
	}
	return s
}

// scrubRecord hides the caller's own token wherever it appears in JSON (full
// arguments) and bearer credentials in it; the JSON stays valid (neither can
// span a quote).
func scrubRecord(b []byte, token string) []byte {
	if len(token) >= minTokenLen {
		b = bytes.ReplaceAll(b, []byte(token), []byte(hidden))
		if q, err := json.Marshal(token); err == nil {
			if esc := strings.Trim(string(q), `"`); esc != token {
				b = bytes.ReplaceAll(b, []byte(esc), []byte(hidden))
			}
		}
	}
	return bearerPattern.ReplaceAll(b, []byte("$1 "+hidden))
}
