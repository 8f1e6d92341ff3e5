package security

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock is a settable clock: rate-limit tests freeze time so that no
// token refills while a loaded machine is slow, which keeps counts exact.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// logBuffer is a concurrency-safe sink for the stack's logs.
type logBuffer struct {
	testtools.SyncBuffer
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// mustStack builds a stack with a frozen clock and closes it at test end.
func mustStack(t *testing.T, cfg Config, clock *fakeClock, tweak ...func(*options)) *Stack {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	o := defaultOptions()
	if clock != nil {
		o.now = clock.Now
	}
	for _, f := range tweak {
		f(&o)
	}
	s, err := newStack(cfg, o)
	if err != nil {
		t.Fatalf("newStack: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// testTools are the tools of the test MCP server; admin-tool keeps its raw
// hyphenated id to exercise raw/sanitized matching.
var testTools = []string{"code-assistant", "summarizer", "admin-tool"}

// newMCPServer serves a real go-sdk Streamable HTTP handler behind the
// stack, with ToolAllowed wired the way the Helix MCP server wires it:
// tools/list is filtered and tools/call refused with isError.
func newMCPServer(t *testing.T, s *Stack) *httptest.Server {
	t.Helper()
	return newMCPServerOpts(t, s, false)
}

// newStatelessMCPServer is for raw-request tests: without sessions every
// request is self-contained, so counting requests against a rate limit needs
// no session clean-up requests in between.
func newStatelessMCPServer(t *testing.T, s *Stack) *httptest.Server {
	t.Helper()
	return newMCPServerOpts(t, s, true)
}

func newMCPServerOpts(t *testing.T, s *Stack, stateless bool) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "security-test", Version: "1.0.0"}, nil)
	for _, name := range testTools {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "test tool " + name},
			func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + req.Params.Name}}}, nil, nil
			})
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			var tctx context.Context = ctx
			if extra := req.GetExtra(); extra != nil {
				tctx = WithTokenInfo(ctx, extra.TokenInfo)
			}
			switch method {
			case "tools/call":
				name := req.(*mcp.CallToolRequest).Params.Name
				if err := s.ToolAllowed(name, tctx); err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
			case "tools/list":
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				lr := res.(*mcp.ListToolsResult)
				kept := lr.Tools[:0]
				for _, tl := range lr.Tools {
					if s.ToolAllowed(tl.Name, tctx) == nil {
						kept = append(kept, tl)
					}
				}
				lr.Tools = kept
				return lr, nil
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: stateless,
		// The stack owns the body limit; the SDK's own 4 MiB default must not
		// undercut a larger max_body_bytes.
		MaxRequestBodyBytes: s.MaxBodyBytes(),
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(s.Middleware(mux))
	t.Cleanup(ts.Close)
	return ts
}

// headerTransport adds fixed headers to every request of the go-sdk client.
type headerTransport struct {
	base http.RoundTripper
	hdr  http.Header
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.hdr {
		r.Header[k] = vs
	}
	return h.base.RoundTrip(r)
}

// connect opens a go-sdk client session with the given headers.
func connect(t *testing.T, ts *httptest.Server, hdr http.Header) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: &headerTransport{base: tr, hdr: hdr}}
	c := mcp.NewClient(&mcp.Implementation{Name: "security-test-client", Version: "1.0.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

func mustConnect(t *testing.T, ts *httptest.Server, hdr http.Header) *mcp.ClientSession {
	t.Helper()
	cs, err := connect(t, ts, hdr)
	if err != nil {
		t.Fatalf("connect with %v: %v", redact(hdr), err)
	}
	return cs
}

func redact(h http.Header) []string {
	var out []string
	for k := range h {
		out = append(out, k)
	}
	return out
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// callTool returns the text of the result and whether it is an error result.
func callTool(t *testing.T, cs *mcp.ClientSession, name string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawPost sends one raw initialize request (or body, when given) and returns
// the response with its body fully read.
func rawPost(t *testing.T, url string, hdr http.Header, body io.Reader) (*http.Response, string) {
	t.Helper()
	if body == nil {
		body = strings.NewReader(initializeBody)
	}
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(req.Context(), 30*time.Second)
	defer cancel()
	resp, err := (&http.Client{Transport: tr}).Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}
