package fastrelay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// A gateway in miniature, for the tests and benchmarks of this file: Helix's
// transport serving the upstream's tools, relayed either by decoding (the
// fast path's CallTool calls the go-sdk client session, whose result the
// transport encodes) or raw (transport.AnswerRaw with this package's relay).

// miniGateway serves the upstream at upURL; raw picks the fast relay.
func miniGateway(t testing.TB, upURL string, raw bool, relayed *atomic.Int64) string {
	c := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: upURL, HTTPClient: NewClient()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	decoding := func(ctx context.Context, call *transport.ToolCall) (*sdk.CallToolResult, error) {
		return cs.CallTool(ctx, &sdk.CallToolParams{Name: call.Name, Arguments: call.Args})
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "gateway", Version: "1"}, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		srv.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return decoding(ctx, &transport.ToolCall{Name: req.Params.Name, Args: req.Params.Arguments})
		})
	}
	fast := transport.NewFastToolCalls(func(ctx context.Context, _ *http.Request, call *transport.ToolCall) (*sdk.CallToolResult, error) {
		return decoding(ctx, call)
	}, nil)
	if raw {
		relay := New(Options{})
		up := &Upstream{URL: upURL, SessionID: cs.ID(), ProtocolVersion: cs.InitializeResult().ProtocolVersion}
		fast.AnswerRaw(func(ctx context.Context, _ *http.Request, call *transport.ToolCall) (json.RawMessage, bool, error) {
			relayed.Add(1)
			perCall := *up
			perCall.Ask = AskSession(call.Session)
			r, err := relay.CallTool(ctx, &perCall, call.Name, call.Args)
			if err != nil {
				return nil, true, err
			}
			if r.Error != nil {
				return nil, true, r.Error
			}
			return r.Result, true, nil
		})
	}
	ts := httptest.NewServer(transport.NewStreamableHandler(srv, &transport.Options{Fast: fast}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// rawClient posts JSON-RPC to one session of a server.
type rawClient struct {
	hc     *http.Client
	url    string
	accept string
	sid    string
}

func newRawClient(t testing.TB, url string) *rawClient {
	c := &rawClient{hc: NewClient(), url: url, accept: "application/json, text/event-stream"}
	status, h, body := c.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if c.sid = h.Get("Mcp-Session-Id"); status != http.StatusOK || c.sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	if status, _, body := c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", status, body)
	}
	return c
}

func (c *rawClient) post(t testing.TB, body string) (int, http.Header, string) {
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", c.accept)
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b.String()
}

// TestFastAndDecodingRelayAnswerTheSameBytes: through Helix's transport, the
// fast relay and the decoding relay answer a client byte for byte alike, as
// JSON and as an event stream, for results, tool errors and the upstream's
// JSON-RPC errors, with the downstream's ids.
func TestFastAndDecodingRelayAnswerTheSameBytes(t *testing.T) {
	t.Parallel()
	for _, jsonUpstream := range []bool{false, true} {
		upURL, _, _ := goSDKUpstream(t, jsonUpstream)
		var relayed atomic.Int64
		fast, decoding := newRawClient(t, miniGateway(t, upURL, true, &relayed)), newRawClient(t, miniGateway(t, upURL, false, &relayed))
		for i, call := range []string{
			`{"name":"echo","arguments":{"text":"hi <b>"}}`,
			`{"name":"echo","arguments":{"text":7}}`,
			`{"name":"echo","arguments":{ "text" : "spaced\u2028" }}`,
			`{"name":"echo"}`,
		} {
			for _, accept := range []string{"application/json, text/event-stream", "text/event-stream"} {
				fast.accept, decoding.accept = accept, accept
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"d-%d","method":"tools/call","params":%s}`, i, call)
				fs, fh, fb := fast.post(t, body)
				ds, dh, db := decoding.post(t, body)
				if fs != ds || fh.Get("Content-Type") != dh.Get("Content-Type") || fb != db {
					t.Errorf("upstream json=%v, %s, accept %s:\n    fast %d %s %s\ndecoding %d %s %s", jsonUpstream, call, accept,
						fs, fh.Get("Content-Type"), fb, ds, dh.Get("Content-Type"), db)
				}
				if relayed.Load() != int64(2*i+1+boolInt(accept == "text/event-stream")) {
					t.Fatalf("the fast relay answered %d calls, want every call to the fast gateway", relayed.Load())
				}
				if !strings.Contains(fb, `"id":"d-`) {
					t.Errorf("answer without the downstream's id: %s", fb)
				}
			}
		}
	}
}

// BenchmarkGatewayCall is one tools/call from a client through Helix's
// transport and a relay to a go-sdk upstream, all in this process: the fast
// relay against the decoding one. The client's and the upstream's costs are
// the same in both.
func BenchmarkGatewayCall(b *testing.B) {
	upURL, _, _ := goSDKUpstream(b, false)
	for _, raw := range []bool{true, false} {
		name := "decoding"
		if raw {
			name = "fast"
		}
		b.Run(name, func(b *testing.B) {
			var relayed atomic.Int64
			c := newRawClient(b, miniGateway(b, upURL, raw, &relayed))
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
			b.ReportAllocs()
			for b.Loop() {
				if status, _, out := c.post(b, body); status != http.StatusOK || !strings.Contains(out, "hello") {
					b.Fatalf("%d %s", status, out)
				}
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
