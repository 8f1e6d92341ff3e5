package suggest

import "testing"

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		word       string
		candidates []string
		want       string
	}{
		{"peroid", []string{"period", "delay", "repeatCount"}, "period"},
		{"levl", []string{"level", "showHeaders"}, "level"},
		{"fileNam", []string{"fileName", "fileExist", "operation"}, "fileName"},
		{"KAFAK", []string{"kafka", "file"}, "kafka"},
		{"zzz", []string{"period"}, ""},
		{"x", nil, ""},
	} {
		if got := Closest(tc.word, tc.candidates); got != tc.want {
			t.Errorf("Closest(%q, %v) = %q, want %q", tc.word, tc.candidates, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"kafak", "kafka", 1}, {"", "abc", 3}, {"same", "same", 0}, {"levl", "level", 1}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
