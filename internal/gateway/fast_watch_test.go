package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// stubRoundTrip answers every request with a one-event stream.
type stubRoundTrip struct{}

func (stubRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader("data: {}\n\n")), Request: r}, nil
}

// TestProgressWatchPassesFastRelayedStreamsBy: the pool client's progress
// watch reads the streams of the decoding relay's calls, not those of
// fast-relayed calls, which read their streams themselves.
func TestProgressWatchPassesFastRelayedStreamsBy(t *testing.T) {
	t.Parallel()
	var count progressCount
	hc := count.countingClient(&http.Client{Transport: stubRoundTrip{}}, "gw-")
	for _, fast := range []bool{false, true} {
		ctx := context.Background()
		if fast {
			ctx = context.WithValue(ctx, fastRelayKey{}, true)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://upstream.invalid/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, watched := resp.Body.(*eventWatch); watched == fast {
			t.Errorf("fast relayed %v: stream watched %v", fast, watched)
		}
		resp.Body.Close()
	}
}
