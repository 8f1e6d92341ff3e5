package postgres

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// COPY goes in binary, and pgx cannot encode a Go string in the binary format of
// most types (a timestamp, a date, a uuid, an interval, an inet …): a body that
// gives such a column as text, which is how JSON carries them, would fail the
// whole COPY. An INSERT sends text and PostgreSQL reads it; for COPY the client
// reads it first, with pgx's own text decoder for the column's type, and hands pgx
// the value it decoded. Types pgx can encode from a string (text, varchar, enums,
// types it does not know) are left alone.

// typeMaps lends pgtype maps: a Map memoizes plans and is not safe for concurrent use.
var typeMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

// textDecoded remembers, per OID, whether a string for it must be decoded first.
var textDecoded sync.Map // uint32 → bool

// needsTextDecode reports whether pgx has no binary encoding of a string for oid
// (and knows the type, so that it can decode the text itself).
func needsTextDecode(oid uint32) bool {
	if v, ok := textDecoded.Load(oid); ok {
		return v.(bool)
	}
	m := typeMaps.Get().(*pgtype.Map)
	_, known := m.TypeForOID(oid)
	need := known && m.PlanEncode(oid, pgtype.BinaryFormatCode, "") == nil
	typeMaps.Put(m)
	textDecoded.Store(oid, need)
	return need
}

// copyText turns the text s for a column of type oid into a value pgx can send in
// binary, or says why it cannot, in the words of the column's type.
func copyText(s string, oid uint32) (any, error) {
	switch oid {
	case pgtype.TimestamptzOID:
		// JSON's usual spelling (RFC 3339, with T) first; PostgreSQL's own after.
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, nil
		}
	case pgtype.TimestampOID:
		// A timestamp without time zone keeps the wall clock and drops an offset, as
		// PostgreSQL does with such text.
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), nil
		}
		if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.UTC); err == nil {
			return t, nil
		}
	case pgtype.ByteaOID:
		// PostgreSQL reads bytea text as hex (\x…) or in the escape format, where
		// plain characters are themselves; pgx's decoder reads only hex.
		if !strings.HasPrefix(s, `\x`) {
			if b, ok := byteaEscaped(s); ok {
				return b, nil
			}
		}
	}
	m := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(m)
	var v any
	err := m.Scan(oid, pgtype.TextFormatCode, []byte(s), &v)
	if err == nil {
		return v, nil
	}
	name := "its type"
	if t, ok := m.TypeForOID(oid); ok {
		name = t.Name
	}
	hint := "write it as PostgreSQL reads a " + name + ", or use insertMode=insert to let PostgreSQL read it"
	if oid == pgtype.TimestamptzOID && !hasOffset(s) {
		hint = "COPY cannot apply the session's TimeZone to it: give its UTC offset (2024-05-01T12:00:00Z or +02:00), or use insertMode=insert"
	}
	return nil, fmt.Errorf("%q is not a %s (%s)", cut(s, 64), name, hint)
}

// byteaEscaped reads bytea's escape format: \\ is a backslash, \ooo an octal
// byte, anything else itself.
func byteaEscaped(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && isOctal(s[i+1]) && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]):
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, false
		}
	}
	return out, true
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// hasOffset reports whether the timestamp text s ends in a zone: Z, +hh, -hh[:mm].
func hasOffset(s string) bool {
	if strings.HasSuffix(s, "Z") || strings.HasSuffix(s, "z") {
		return true
	}
	// After the date (its dashes), a sign starts the offset.
	if len(s) > 10 {
		return strings.ContainsAny(s[10:], "+-")
	}
	return false
}

// cut shortens s for an error message.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
