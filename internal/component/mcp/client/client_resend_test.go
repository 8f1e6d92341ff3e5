package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// rpcPeek is what the test servers read from a POSTed JSON-RPC message.
type rpcPeek struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// peekRPC reads r's body (restoring it for the next handler) and decodes the message.
func peekRPC(r *http.Request) rpcPeek {
	var m rpcPeek
	if r.Method != http.MethodPost || r.Body == nil {
		return m
	}
	data, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(data))
	_ = json.Unmarshal(data, &m)
	return m
}

// pingServer is a go-sdk server with a tool "ping" answering "pong" and counting runs.
func pingServer(runs *atomic.Int64) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "resend", Version: "1"}, nil)
	for _, name := range []string{"ping", "crash", "nope", "gateway"} {
		s.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				runs.Add(1)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
			})
	}
	return s
}

// callsCounter counts the tools/call requests a server received, per tool.
type callsCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callsCounter) add(tool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[tool]++
}

func (c *callsCounter) get(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[tool]
}

// mcpgoStyleServer is a Streamable HTTP server that answers the mcp-go way for tool
// "nope": HTTP 400 with a JSON-RPC error that echoes the request's id. Tool "crash"
// drops the connection once it has read the request, "gateway" gets a 502 (a proxy
// whose upstream failed); other tools are served by a go-sdk server. Every tools/call
// is counted.
func mcpgoStyleServer(t *testing.T, calls *callsCounter, runs *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := pingServer(runs)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := peekRPC(r)
		if m.Method == "tools/call" {
			calls.add(m.Params.Name)
			switch m.Params.Name {
			case "nope":
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32602,"message":"tool 'nope' not found: tool not found"}}`)
				return
			case "crash":
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = conn.Close()
				}
				return
			case "gateway":
				// A proxy whose upstream took the call and then failed.
				http.Error(w, "upstream went away", http.StatusBadGateway)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func startProducer(t *testing.T, raw string) *Producer {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := NewEndpoint(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ep.CreateProducer()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p.(*Producer)
}

// TestClientHTTP400JSONRPCErrorIsToolError: a JSON-RPC error answered in an HTTP 400
// body (mcp-go's answer to an unknown tool) is the server's answer: a tool error
// handled per throwExceptionOnFailure, sent once, not a reason to reconnect.
func TestClientHTTP400JSONRPCErrorIsToolError(t *testing.T) {
	t.Parallel()
	var calls callsCounter
	var runs atomic.Int64
	hs := mcpgoStyleServer(t, &calls, &runs)
	addr := strings.TrimPrefix(hs.URL, "http://")

	p := startProducer(t, "mcp://"+addr+"/nope")
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"a": 1})
	if err := p.Process(context.Background(), ex); err != nil {
		t.Fatalf("Process: %v (a JSON-RPC answer is a tool error, not a failure of the step)", err)
	}
	var te *ToolError
	if !errors.As(ex.Exception(), &te) || !te.Protocol || te.Code != -32602 {
		t.Fatalf("exception = %v, want a protocol ToolError -32602", ex.Exception())
	}
	if got := ex.In().Body(); got != "tool 'nope' not found: tool not found" {
		t.Errorf("body = %#v", got)
	}
	if got := ex.In().HeaderString(exchange.HeaderMcpIsError); got != "true" {
		t.Errorf("HelixMcpIsError = %q", got)
	}
	if n := calls.get("nope"); n != 1 {
		t.Fatalf("tools/call sent %d times, want 1", n)
	}

	// throwExceptionOnFailure=false: same answer, no exception.
	p2 := startProducer(t, "mcp://"+addr+"/nope?throwExceptionOnFailure=false")
	ex = exchange.NewWithBody(exchange.InOut, nil)
	if err := p2.Process(context.Background(), ex); err != nil || ex.Exception() != nil {
		t.Fatalf("throwExceptionOnFailure=false: err %v exception %v", err, ex.Exception())
	}
	if ex.In().HeaderString(exchange.HeaderMcpIsError) != "true" || !strings.Contains(exchange.Stringify(ex.In().Body()), "not found") {
		t.Fatalf("throwExceptionOnFailure=false: headers %v body %v", ex.In().Headers(), ex.In().Body())
	}
	if n := calls.get("nope"); n != 2 {
		t.Fatalf("tools/call sent %d times in all, want 2 (one per exchange)", n)
	}
}

// TestClientNoResendAfterConnectionDrop: a server that reads tools/call and then drops
// the connection, or a 502 from a proxy, may mean the tool ran; the call fails without
// being sent again, and the next call goes through.
func TestClientNoResendAfterConnectionDrop(t *testing.T) {
	t.Parallel()
	var calls callsCounter
	var runs atomic.Int64
	hs := mcpgoStyleServer(t, &calls, &runs)
	conn, err := NewConn(Config{Endpoint: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx := context.Background()

	for _, tool := range []string{"crash", "gateway"} {
		_, err = conn.CallTool(ctx, tool, nil)
		var te *ToolError
		if err == nil || errors.As(err, &te) {
			t.Fatalf("%s: err = %v, want a transport error", tool, err)
		}
		if n := calls.get(tool); n != 1 {
			t.Fatalf("%s: tools/call sent %d times, want 1 (the server may have run it)", tool, n)
		}
		if !strings.Contains(err.Error(), "not sent again") {
			t.Errorf("%s: err = %v, want it to say the call was not sent again", tool, err)
		}
	}
	res, err := conn.CallTool(ctx, "ping", nil)
	if err != nil {
		t.Fatalf("next call: %v", err)
	}
	if body, _ := BodyFromResult(res); body != "pong" {
		t.Fatalf("next call: body %q", body)
	}
	if n := calls.get("ping"); n != 1 {
		t.Fatalf("ping sent %d times, want 1", n)
	}
}

// TestClientResendsOnlyWhatWasRefused: a request the server refused without
// processing it — 404 for a session it no longer knows, or a 400 whose JSON-RPC error
// has a null id ("No valid session ID", as TypeScript servers answer after a restart) —
// goes again on a new session, and the tool runs once.
func TestClientResendsOnlyWhatWasRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		refuse func(w http.ResponseWriter)
	}{
		{"404 unknown session", func(w http.ResponseWriter) { http.Error(w, "session not found", http.StatusNotFound) }},
		{"400 null id", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			var calls callsCounter
			srv := pingServer(&runs)
			h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			var mu sync.Mutex
			forgotten := map[string]bool{}
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				m := peekRPC(r)
				if m.Method == "tools/call" {
					calls.add(m.Params.Name)
				}
				mu.Lock()
				gone := forgotten[r.Header.Get("Mcp-Session-Id")]
				mu.Unlock()
				if gone {
					tc.refuse(w)
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(hs.Close)
			conn, err := NewConn(Config{Endpoint: hs.URL})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			ctx := context.Background()
			if _, err := conn.CallTool(ctx, "ping", nil); err != nil {
				t.Fatal(err)
			}
			conn.mu.Lock()
			id := conn.sess.ID()
			conn.mu.Unlock()
			mu.Lock()
			forgotten[id] = true // "restarted": the session is unknown from now on
			mu.Unlock()

			res, err := conn.CallTool(ctx, "ping", nil)
			if err != nil {
				t.Fatalf("call after the session was forgotten: %v", err)
			}
			if body, _ := BodyFromResult(res); body != "pong" {
				t.Fatalf("body %q", body)
			}
			if n := runs.Load(); n != 2 {
				t.Fatalf("tool ran %d times, want 2 (once per call)", n)
			}
			if n := calls.get("ping"); n != 3 {
				t.Fatalf("tools/call sent %d times, want 3 (the refused one again)", n)
			}
		})
	}
}

// TestClientFindsStreamableHTTPPath: mcp://host:port/tool without a path finds a
// server that serves /mcp only and one that serves / only, and remembers the path
// that worked.
func TestClientFindsStreamableHTTPPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, path, wrong string }{
		{"/mcp only", "/mcp", "/"},
		{"/ only", "/", "/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			srv := pingServer(&runs)
			h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			var wrongHits atomic.Int64
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tc.path {
					if r.URL.Path == tc.wrong {
						wrongHits.Add(1)
					}
					http.NotFound(w, r)
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(hs.Close)
			p := startProducer(t, "mcp://"+strings.TrimPrefix(hs.URL, "http://")+"/ping")
			call := func() {
				t.Helper()
				ex := exchange.NewWithBody(exchange.InOut, nil)
				if err := p.Process(context.Background(), ex); err != nil || ex.Exception() != nil {
					t.Fatalf("call: err %v exception %v", err, ex.Exception())
				}
				if got := ex.In().Body(); got != "pong" {
					t.Fatalf("body %#v", got)
				}
			}
			call()
			before := wrongHits.Load()
			// Force a new session: the path that worked is used straight away.
			p.mu.Lock()
			conn := p.conn
			p.mu.Unlock()
			conn.mu.Lock()
			s := conn.sess
			conn.mu.Unlock()
			conn.drop(s)
			call()
			if n := wrongHits.Load(); n != before {
				t.Fatalf("the reconnect tried %s again (%d requests), want the remembered %s", tc.wrong, n-before, tc.path)
			}
		})
	}
}

// cancelRecorder wraps an MCP handler and records the ids of the requests a
// notifications/cancelled named.
type cancelRecorder struct {
	mu  sync.Mutex
	ids []string
	h   http.Handler
}

func (c *cancelRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m := peekRPC(r); m.Method == "notifications/cancelled" {
		c.mu.Lock()
		c.ids = append(c.ids, string(m.Params.RequestID))
		c.mu.Unlock()
	}
	c.h.ServeHTTP(w, r)
}

func (c *cancelRecorder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}

// slowServer has a tool "slow" that runs until it is cancelled or release is called
// (which the test defers, so that it runs before the cleanups that close sessions).
func slowServer() (s *sdk.Server, release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	s = sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {
			case <-ctx.Done():
			case <-ch:
			}
			return nil, ctx.Err()
		})
	return s, release
}

// TestClientTimeoutSendsCancelled: when the URI's timeout passes, the server has been
// told with notifications/cancelled by the time the producer returns, over Streamable
// HTTP and SSE.
func TestClientTimeoutSendsCancelled(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			s, release := slowServer()
			defer release()
			var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
			if transport == "sse" {
				h = sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil)
			}
			rec := &cancelRecorder{h: h}
			mux := http.NewServeMux()
			mux.Handle("/mcp", rec)
			mux.Handle("/sse", rec)
			hs := httptest.NewServer(mux)
			t.Cleanup(hs.Close)
			path := "/mcp"
			if transport == "sse" {
				path = "" // mcp://host:port/tool?transport=sse is http://host:port/sse
			}
			p := startProducer(t, "mcp://"+strings.TrimPrefix(hs.URL, "http://")+path+"/slow?timeout=300ms&transport="+transport)
			ex := exchange.NewWithBody(exchange.InOut, nil)
			err := p.Process(context.Background(), ex)
			if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
				t.Fatalf("err = %v, want the timeout", err)
			}
			if n := rec.count(); n != 1 {
				t.Fatalf("%d notifications/cancelled reached the server when the call returned, want 1", n)
			}
		})
	}
}

// stdioHelperEnv names the file the stdio helper server counts tools/call runs in;
// when set, TestClientStdioHelperServer is that server instead of a test.
const stdioHelperEnv = "HELIX_TEST_STDIO_SERVER_COUNT"

// TestClientStdioHelperServer is not a test: run as a subprocess by
// TestClientStdioNoResendAfterExit with stdioHelperEnv set, it is a stdio MCP server
// whose tool "crash" records the call and exits without answering.
func TestClientStdioHelperServer(t *testing.T) {
	t.Parallel()
	countFile := os.Getenv(stdioHelperEnv)
	if countFile == "" {
		t.Skip("helper process for TestClientStdioNoResendAfterExit")
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "stdio-helper", Version: "1"}, nil)
	record := func(name string) {
		f, err := os.OpenFile(countFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, _ = f.WriteString(name + "\n")
			_ = f.Close()
		}
	}
	s.AddTool(&sdk.Tool{Name: "crash", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			record("crash")
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			record("ping")
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
		})
	_ = s.Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0) // nothing of the test framework may reach stdout
}

// TestClientStdioNoResendAfterExit: a stdio server that read the call and exited may
// have run it: the call fails without being sent to a new subprocess, and the next
// call starts one.
func TestClientStdioNoResendAfterExit(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	countFile := filepath.Join(t.TempDir(), "calls")
	conn, err := NewConn(Config{
		Transport: TransportStdio,
		Command:   exe,
		Args:      []string{"-test.run=^TestClientStdioHelperServer$"},
		Env:       []string{stdioHelperEnv + "=" + countFile},
		Stderr:    io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	calls := func() string {
		data, _ := os.ReadFile(countFile)
		return string(data)
	}
	_, err = conn.CallTool(context.Background(), "crash", nil)
	if err == nil || !strings.Contains(err.Error(), "not sent again") {
		t.Fatalf("err = %v, want a failure that was not sent again", err)
	}
	if got := calls(); got != "crash\n" {
		t.Fatalf("calls received = %q, want crash once", got)
	}
	res, err := conn.CallTool(context.Background(), "ping", nil)
	if err != nil {
		t.Fatalf("next call: %v", err)
	}
	if body, _ := BodyFromResult(res); body != "pong" {
		t.Fatalf("next call: body %q", body)
	}
	if got := calls(); got != "crash\nping\n" {
		t.Fatalf("calls received = %q, want crash then ping", got)
	}
}
