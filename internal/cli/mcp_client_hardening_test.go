package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// cliTestMCPServer is a go-sdk server with "echo" and "slow" (runs until cancelled, or
// until the returned release is called; the test defers it so that it runs before the
// cleanups that close sessions).
func cliTestMCPServer() (*sdk.Server, func()) {
	ch := make(chan struct{})
	var once sync.Once
	s := sdk.NewServer(&sdk.Implementation{Name: "cli-hardening", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo " + string(req.Params.Arguments)}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {
			case <-ctx.Done():
			case <-ch:
			}
			return nil, ctx.Err()
		})
	return s, func() { once.Do(func() { close(ch) }) }
}

// cancelledIDs records the request ids named by notifications/cancelled POSTs.
type cancelledIDs struct {
	mu  sync.Mutex
	ids []string
}

func (c *cancelledIDs) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			data, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(data))
			var m struct {
				Method string `json:"method"`
				Params struct {
					RequestID json.RawMessage `json:"requestId"`
				} `json:"params"`
			}
			if json.Unmarshal(data, &m) == nil && m.Method == "notifications/cancelled" {
				c.mu.Lock()
				c.ids = append(c.ids, string(m.Params.RequestID))
				c.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (c *cancelledIDs) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}

// TestMCPCallTimeoutSendsCancelled: when --timeout passes, helix mcp call tells the
// server with notifications/cancelled before it exits, over SSE and Streamable HTTP.
func TestMCPCallTimeoutSendsCancelled(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"sse", "http"} {
		t.Run(transport, func(t *testing.T) {
			s, release := cliTestMCPServer()
			defer release()
			var rec cancelledIDs
			mux := http.NewServeMux()
			mux.Handle("/sse", rec.wrap(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil)))
			mux.Handle("/mcp", rec.wrap(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)))
			hs := httptest.NewServer(mux)
			t.Cleanup(hs.Close)
			addr := strings.TrimPrefix(hs.URL, "http://")
			if transport == "http" {
				addr = hs.URL + "/mcp"
			}
			code, stdout, stderr := execute(t, "mcp", "call", "--transport", transport, "--timeout", "1s", addr, "slow")
			if code != ExitRuntime || !strings.Contains(stderr, "no answer within 1s") {
				t.Fatalf("exit %d stdout %q stderr %q, want the timeout", code, stdout, stderr)
			}
			if ids := rec.get(); len(ids) != 1 {
				t.Fatalf("notifications/cancelled received when the command exited: %v, want one", ids)
			}
		})
	}
}

// TestMCPSuggestsSSETransport: on a 404, inspect and call probe /sse and, when an SSE
// server answers there, name the flag that reaches it; when nothing answers there,
// they do not.
func TestMCPSuggestsSSETransport(t *testing.T) {
	t.Parallel()
	s, release := cliTestMCPServer()
	defer release()
	mux := http.NewServeMux()
	mux.Handle("/sse", sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil))
	sseOnly := httptest.NewServer(mux)
	t.Cleanup(sseOnly.Close)
	nothing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(nothing.Close)

	const hint = "--transport sse"
	for _, tc := range []struct {
		name string
		args []string
		hint bool
	}{
		{"call host:port", []string{"call", strings.TrimPrefix(sseOnly.URL, "http://"), "echo"}, true},
		{"call url", []string{"call", sseOnly.URL + "/mcp", "echo"}, true},
		{"inspect", []string{"inspect", strings.TrimPrefix(sseOnly.URL, "http://")}, true},
		{"call without sse", []string{"call", strings.TrimPrefix(nothing.URL, "http://"), "echo"}, false},
		{"inspect without sse", []string{"inspect", nothing.URL}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, append([]string{"mcp"}, tc.args...)...)
			if code != ExitRuntime || stdout != "" {
				t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
			}
			if got := strings.Contains(stderr, hint); got != tc.hint {
				t.Fatalf("stderr %q: mentions %q = %v, want %v", stderr, hint, got, tc.hint)
			}
		})
	}
	// The flag it names works.
	code, stdout, stderr := execute(t, "mcp", "call", "--transport", "sse", strings.TrimPrefix(sseOnly.URL, "http://"), "echo", "a=1")
	if code != ExitOK || stdout != "echo {\"a\":1}\n" {
		t.Fatalf("with --transport sse: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

// TestMCPCallFindsMCPPath: host:port finds a server that serves Streamable HTTP only
// at /mcp, as mcp://host:port/tool does.
func TestMCPCallFindsMCPPath(t *testing.T) {
	t.Parallel()
	s, release := cliTestMCPServer()
	defer release()
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	addr := strings.TrimPrefix(hs.URL, "http://")
	code, stdout, stderr := execute(t, "mcp", "call", addr, "echo", "a=1")
	if code != ExitOK || stdout != "echo {\"a\":1}\n" {
		t.Fatalf("call: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "inspect", addr)
	if code != ExitOK || !strings.HasPrefix(stdout, "MCP Server: "+hs.URL+"/mcp\n") || !strings.Contains(stdout, "slow") {
		t.Fatalf("inspect: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}
