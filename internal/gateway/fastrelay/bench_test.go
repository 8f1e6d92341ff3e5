package fastrelay

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// cannedUpstream answers like a go-sdk server (initialize, then tools/call on
// an event stream) from fixed bytes, so that what a benchmark measures is the
// client side of a call: the fast relay, or the go-sdk client session the
// decoding relay calls through. Both run in one process with this upstream;
// its share of each figure is the same.
func cannedUpstream(b *testing.B) string {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m message
		_ = json.Unmarshal(body, &m)
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "canned")
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"1"}}}`)
		case len(m.ID) == 0:
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+
				",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n\n")
		}
	})
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	return ts.URL
}

// BenchmarkFastRelay is one tools/call through the fast relay (its upstream
// side on Helix's own HTTP/1.1 loop, h1).
func BenchmarkFastRelay(b *testing.B) { benchFastRelay(b, New(Options{})) }

// BenchmarkFastRelayNetHTTP is the same with the upstream side on net/http's
// transport, as before the loop.
func BenchmarkFastRelayNetHTTP(b *testing.B) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	b.Cleanup(tr.CloseIdleConnections)
	benchFastRelay(b, New(Options{Client: &http.Client{Transport: tr}}))
}

func benchFastRelay(b *testing.B, relay *Relay) {
	url := cannedUpstream(b)
	up := &Upstream{URL: url, SessionID: "canned", ProtocolVersion: "2025-06-18"}
	args := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r, err := relay.CallTool(ctx, up, "echo", args); err != nil || r.Error != nil {
				b.Fatal(err, r.Error)
			}
		}
	})
}

// BenchmarkDecodingRelay is the same call through a go-sdk client session, as
// the gateway's decoding relay makes it, with the result encoded again as the
// downstream answer needs it.
func BenchmarkDecodingRelay(b *testing.B) {
	url := cannedUpstream(b)
	c := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: NewClient()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	args := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := res.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
