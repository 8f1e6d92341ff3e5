package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// hugeAnswerServer is a Streamable HTTP server whose tool "huge" answers with a text
// of size bytes, streamed by hand (as JSON, or as one SSE event) so that the server
// does not hold it in memory; other requests go to a go-sdk server. written counts
// the bytes of huge's answer the server managed to write.
func hugeAnswerServer(t *testing.T, size int64, sse bool, written *atomic.Int64) *httptest.Server {
	t.Helper()
	var runs atomic.Int64
	srv := pingServer(&runs)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := peekRPC(r)
		if m.Method != "tools/call" || m.Params.Name != "huge" {
			h.ServeHTTP(w, r)
			return
		}
		head := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"`
		tail := `"}]}}`
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			head = "event: message\ndata: " + head
			tail += "\n\n"
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		chunk := []byte(strings.Repeat("a", 64<<10))
		if n, err := io.WriteString(w, head); err != nil {
			return
		} else {
			written.Add(int64(n))
		}
		for left := size; left > 0; left -= int64(len(chunk)) {
			c := chunk[:min(int64(len(chunk)), left)]
			n, err := w.Write(c)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, tail)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// TestClientMaxResponseBytes: an answer larger than maxResponseBytes fails the call
// with an error naming the option, as a JSON body and as an event stream, and the
// client stops reading instead of buffering the whole answer.
func TestClientMaxResponseBytes(t *testing.T) {
	t.Parallel()
	for _, sse := range []bool{false, true} {
		name := "json"
		if sse {
			name = "sse"
		}
		t.Run(name, func(t *testing.T) {
			var written atomic.Int64
			hs := hugeAnswerServer(t, 1<<30, sse, &written)
			p := startProducer(t, "mcp://"+strings.TrimPrefix(hs.URL, "http://")+"/mcp/huge?maxResponseBytes=65536&timeout=20s")
			ex := exchange.NewWithBody(exchange.InOut, nil)
			err := p.Process(context.Background(), ex)
			if err == nil || !strings.Contains(err.Error(), "maxResponseBytes") || !strings.Contains(err.Error(), "65536") {
				t.Fatalf("err = %v, want an error naming maxResponseBytes=65536", err)
			}
			// The client closed the oversized response's connection; the server's
			// writes fail soon after. (Closing the server's side of every connection
			// here would also kill the client's idle pooled ones, and the next call
			// could pick one up and fail with EOF.)
			waitSteady(&written)
			if n := written.Load(); n > 256<<20 {
				t.Fatalf("the server wrote %d bytes before the client gave up", n)
			}
			// The connection stays usable for answers within the limit.
			ex = exchange.NewWithBody(exchange.InOut, nil)
			ex.In().SetHeader(exchange.HeaderMcpToolName, "ping")
			if err := p.Process(context.Background(), ex); err != nil || ex.In().Body() != "pong" {
				t.Fatalf("next call: %v, body %v", err, ex.In().Body())
			}
		})
	}
}

// TestClientMaxResponseBytesDefault: without the option a 65 MiB answer exceeds the
// default of 64 MiB.
func TestClientMaxResponseBytesDefault(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	hs := hugeAnswerServer(t, 65<<20, false, &written)
	p := startProducer(t, "mcp://"+strings.TrimPrefix(hs.URL, "http://")+"/mcp/huge?timeout=60s")
	err := p.Process(context.Background(), exchange.NewWithBody(exchange.InOut, nil))
	if err == nil || !strings.Contains(err.Error(), "maxResponseBytes") {
		t.Fatalf("err = %v, want an error naming maxResponseBytes", err)
	}
}

func TestMaxResponseBytesOption(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"mcp://h:1/t?maxResponseBytes=0", "mcp://h:1/t?maxResponseBytes=-5", "mcp://h:1/t?maxResponseBytes=lots"} {
		if _, err := NewEndpoint(mustParse(t, raw), nil); err == nil || !strings.Contains(err.Error(), "maxResponseBytes") {
			t.Errorf("%s: err = %v, want one naming maxResponseBytes", raw, err)
		}
	}
	ep, err := NewEndpoint(mustParse(t, "mcp://h:1/t"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ep.Config().MaxResponseBytes; got != DefaultMaxResponseBytes {
		t.Fatalf("default MaxResponseBytes = %d", got)
	}
}

func mustParse(t *testing.T, raw string) *uri.URI {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// waitSteady waits until n stops growing for 200 ms (at most 10 s).
func waitSteady(n *atomic.Int64) {
	deadline := time.Now().Add(testtools.StartupBound)
	last := n.Load()
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		cur := n.Load()
		if cur == last {
			return
		}
		last = cur
	}
}
