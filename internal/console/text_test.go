package console

import "testing"

func TestCutAndClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		cut  string
		clip string
	}{
		{"hello", 10, "hello", "hello"},
		{"hello", 3, "hel", "hel…"},
		{"héllo", 2, "h", "h…"}, // é is two bytes: never split
		{"héllo", 3, "hé", "hé…"},
		{"abc", 0, "", "…"},
		{"abc", -1, "", "…"},
		{"a\xffbc", 10, "a\xffbc", "a\uFFFDbc"},
	} {
		if got := Cut(c.s, c.n); got != c.cut {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.cut)
		}
		if got := Clip(c.s, c.n); got != c.clip {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.clip)
		}
	}
}
