package postgres

import (
	"bytes"
	"testing"
)

// bytea's escape format as PostgreSQL reads it: \\ a backslash, \ooo a byte,
// another backslash an error (PostgreSQL refuses it too).
func TestByteaEscaped(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []byte
		ok   bool
	}{
		{"abc", []byte("abc"), true},
		{`a\\b`, []byte(`a\b`), true},
		{`\001\377x`, []byte{1, 255, 'x'}, true},
		{`\400`, nil, false},
		{`\1`, nil, false},
		{`tail\`, nil, false},
		{`\q`, nil, false},
		{"", []byte{}, true},
	} {
		got, ok := byteaEscaped(c.in)
		if ok != c.ok || (ok && !bytes.Equal(got, c.want)) {
			t.Errorf("byteaEscaped(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestHasOffset(t *testing.T) {
	for in, want := range map[string]bool{
		"2026-12-05T10:11:12Z": true, "2026-12-05 10:11:12+02": true, "2026-12-05T10:11:12.5-03:30": true,
		"2026-12-05 10:11:12": false, "2026-12-05": false, "2026-12-05T10:11:12.123": false,
	} {
		if got := hasOffset(in); got != want {
			t.Errorf("hasOffset(%q) = %v, want %v", in, got, want)
		}
	}
}
