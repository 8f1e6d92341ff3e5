package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// stdioServerEnv makes the test binary a stdio MCP server (see TestMain).
const stdioServerEnv = "HELIX_UPSTREAM_TEST_STDIO_SERVER"

// legacyVersions are the protocol versions of a stateful (pre-2026-07-28) server.
var legacyVersions = []string{"2025-11-25", "2025-06-18"}

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		srv := testServer("stdio", nil, nil)
		if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "stdio test server:", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// modernServers are the test servers of the 2026-07-28 era.
var (
	modernMu      sync.Mutex
	modernServers = map[*sdk.Server]bool{}
)

type textArgs struct {
	Text string `json:"text,omitempty"`
}

// testServer is an MCP server with the tools the tests call: whoami (the
// server's name, its process id and the session's id), echo, exit (the
// process exits: stdio only), slow (1s, or until cancelled), stderr
// (writes its text to stderr) and count (slow
// and count count their runs in runs).
func testServer(name string, versions []string, runs *atomic.Int64) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: versions})
	if versions == nil {
		modernMu.Lock()
		modernServers[srv] = true
		modernMu.Unlock()
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami"}, func(_ context.Context, req *sdk.CallToolRequest, _ textArgs) (*sdk.CallToolResult, any, error) {
		return text(fmt.Sprintf("%s %d %s", name, os.Getpid(), req.Session.ID())), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (*sdk.CallToolResult, any, error) {
		return text(a.Text), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "exit"}, func(context.Context, *sdk.CallToolRequest, textArgs) (*sdk.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "slow"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ textArgs) (*sdk.CallToolResult, any, error) {
		if runs != nil {
			runs.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		return text("slow"), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "hang"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ textArgs) (*sdk.CallToolResult, any, error) {
		if runs != nil {
			runs.Add(1)
		}
		// Answers when the call is cancelled, or after longer than any
		// timeout a test gives it (a call that timed out on the client is
		// not cancelled here: the test server's Close waits for it).
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		return text("hang"), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "stderr"}, func(_ context.Context, _ *sdk.CallToolRequest, a textArgs) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, a.Text)
		return text("written"), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "count"}, func(context.Context, *sdk.CallToolRequest, textArgs) (*sdk.CallToolResult, any, error) {
		if runs != nil {
			runs.Add(1)
		}
		return text("counted"), nil, nil
	})
	return srv
}

// httpUpstream serves srv over Streamable HTTP; wrap, when set, sees every
// request first. A server of the 2026-07-28 era (no versions narrowed) is
// stateless: the go-sdk serves that era only so.
func httpUpstream(t *testing.T, srv *sdk.Server, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	modernMu.Lock()
	modern := modernServers[srv]
	modernMu.Unlock()
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: modern})
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// rpcMethod peeks the JSON-RPC method of a POST without consuming its body.
func rpcMethod(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Method
}

// stdioConfig is a stdio upstream running the test binary as its server.
func stdioConfig(sessions string) config.UpstreamConfig {
	return config.UpstreamConfig{ID: "local", Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env: map[string]string{stdioServerEnv: "1"}, Sessions: sessions, Health: config.HealthConfig{Interval: -1}}
}

// newPool builds a pool closed at the end of the test.
func newPool(t *testing.T, cfg config.UpstreamConfig, opts ...Option) *Pool {
	t.Helper()
	p, err := New(cfg, nil, slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return p
}

// callText calls tool through p for key and returns the result's text.
func callText(ctx context.Context, p *Pool, key gateway.SessionKey, tool string, args map[string]any) (string, error) {
	var out string
	err := p.Call(ctx, key, nil, func(ctx context.Context, s *sdk.ClientSession) error {
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("tool error: %v", res.Content)
		}
		out = res.Content[0].(*sdk.TextContent).Text
		return nil
	})
	return out, err
}

// mustCall is callText failing the test on error.
func mustCall(t *testing.T, p *Pool, key gateway.SessionKey, tool string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := callText(ctx, p, key, tool, nil)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return out
}

// field returns the i-th space-separated field of whoami's answer.
func field(s string, i int) string {
	f := strings.Fields(s)
	if i >= len(f) {
		return ""
	}
	return f[i]
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logBuffer is a concurrency-safe log sink for tests that read the log.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
