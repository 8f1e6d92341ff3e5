package transport

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestStdioLongLineIsSkipped: a line over the limit is consumed whole (and
// refused by the caller), the next line is read normally.
func TestStdioLongLineIsSkipped(t *testing.T) {
	t.Parallel()
	r := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("x", 100)+"\nnext"), 16)
	for _, want := range []struct {
		line    string
		tooLong bool
		err     error
	}{{"short", false, nil}, {"", true, nil}, {"next", false, io.EOF}} {
		line, tooLong, err := readLine(r, 50)
		if string(line) != want.line || tooLong != want.tooLong || err != want.err {
			t.Fatalf("got %q %v %v, want %+v", line, tooLong, err, want)
		}
	}
}
