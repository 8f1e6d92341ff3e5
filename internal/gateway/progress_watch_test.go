package gateway

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The event stream of an upstream's answer is passed on byte for byte, and
// the progress notifications of the gateway's tokens in it are counted,
// however the stream is cut into reads, whatever its line endings, and
// without keeping an overlong line.
func TestEventWatchCountsProgressOfOurTokens(t *testing.T) {
	huge := strings.Repeat("x", maxWatchedLine+10)
	stream := "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"gw-1\",\"progress\":1}}\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"other\",\"progress\":1}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\n" +
		"data: \"params\":{\"progressToken\":\"gw-1\",\"progress\":2}}\n\n" +
		"data: " + huge + "notifications/progress\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"gw-2\",\"progress\":1}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"notifications/progress gw-1\"}]}}\n\n"
	for name, r := range map[string]io.Reader{
		"whole":        strings.NewReader(stream),
		"byte by byte": iotest.OneByteReader(strings.NewReader(stream)),
		"halves":       iotest.HalfReader(strings.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			var c progressCount
			c.init()
			e := &eventWatch{ReadCloser: io.NopCloser(r), w: &progressWatch{count: &c, prefix: "gw-"}}
			got, err := io.ReadAll(e)
			if err != nil || string(got) != stream {
				t.Fatalf("the stream changed (%v)", err)
			}
			if c.seen["gw-1"] != 2 || c.seen["gw-2"] != 1 || len(c.seen) != 2 {
				t.Errorf("counted %v, want gw-1: 2, gw-2: 1", c.seen)
			}
			if len(e.line) > maxWatchedLine+1 {
				t.Errorf("kept %d bytes of a line", len(e.line))
			}
		})
	}
}
