package fastrelay

import "testing"

func TestIsToolError(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`{"content":[],"isError":true}`:                                 true,
		`{"isError":true,"content":[]}`:                                 true,
		`{"content":[],"isError":false}`:                                false,
		`{"content":[{"type":"text","text":"\"isError\":true"}]}`:       false,
		`{"structuredContent":{"isError":true},"content":[]}`:           false,
		`{"content":[{"isError":true}]}`:                                false,
		`{"a":"x\\","isError":true}`:                                    true,
		`{"content":[{"type":"text","text":"x\\\",\"isError\":true"}]}`: false,
	} {
		if got := IsToolError([]byte(in)); got != want {
			t.Errorf("IsToolError(%s) = %v, want %v", in, got, want)
		}
	}
}
