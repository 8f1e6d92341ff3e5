package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

type stringer struct{}

func (stringer) String() string { return "custom" }

func TestArgumentsFromBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body any
		want map[string]any
	}{
		{"nil", nil, map[string]any{}},
		{"map as is", map[string]any{"a": 1}, map[string]any{"a": 1}},
		{"nil map", map[string]any(nil), map[string]any{}},
		{"json object string", `{"q":"x","n":2}`, map[string]any{"q": "x", "n": 2.0}},
		{"json object bytes", []byte(`{"q":"x"}`), map[string]any{"q": "x"}},
		{"raw message", json.RawMessage(`{"q":true}`), map[string]any{"q": true}},
		{"plain string", "hello", map[string]any{"input": "hello"}},
		{"plain bytes", []byte("hello"), map[string]any{"input": "hello"}},
		{"json array string", `[1,2]`, map[string]any{"input": "[1,2]"}},
		{"json number string", `42`, map[string]any{"input": "42"}},
		{"json null string", `null`, map[string]any{"input": "null"}},
		{"empty string", "", map[string]any{"input": ""}},
		{"int", 42, map[string]any{"input": "42"}},
		{"bool", true, map[string]any{"input": "true"}},
		// The MCP guide (spec §4.4) says "JSON-marshaled"; the component spec says %v, and
		// the component spec is followed (docs/mcp-client.md documents it).
		{"slice uses %v, not JSON", []any{"a", "b"}, map[string]any{"input": "[a b]"}},
		{"stringer", stringer{}, map[string]any{"input": "custom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ArgumentsFromBody(tc.body)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ArgumentsFromBody(%#v) = %#v, want %#v", tc.body, got, tc.want)
			}
		})
	}
}

func TestBodyFromResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		res  *sdk.CallToolResult
		want string
	}{
		{"nil", nil, ""},
		{"texts concatenated", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.ImageContent{Data: []byte{1}, MIMEType: "image/png"}, &sdk.TextContent{Text: "b"}}}, "ab"},
		{"text wins over structured", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "t"}}, StructuredContent: map[string]any{"x": 1}}, "t"},
		{"structured fallback", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}, StructuredContent: map[string]any{"x": 1}}, `{"x":1}`},
		{"nothing", &sdk.CallToolResult{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BodyFromResult(tc.res)
			if err != nil || got != tc.want {
				t.Fatalf("BodyFromResult = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := BodyFromResult(&sdk.CallToolResult{StructuredContent: func() {}}); err == nil {
		t.Fatal("unencodable structured content: no error")
	}
}

func TestParseClientURI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want Config
		tool string
	}{
		{"mcp://localhost:8181/search", Config{Transport: "http", Endpoint: "http://localhost:8181", FindPath: true, Timeout: DefaultCallTimeout, MaxResponseBytes: DefaultMaxResponseBytes}, "search"},
		{"mcp://127.0.0.1:3011/mcp/echo", Config{Transport: "http", Endpoint: "http://127.0.0.1:3011/mcp", Timeout: DefaultCallTimeout, MaxResponseBytes: DefaultMaxResponseBytes}, "echo"},
		{"mcp://h:1/a/b/tool?transport=http&scheme=https&timeout=5s", Config{Transport: "http", Endpoint: "https://h:1/a/b", Timeout: 5 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes}, "tool"},
		{"mcp://h:1/tool?transport=sse", Config{Transport: "sse", Endpoint: "http://h:1/sse", Timeout: DefaultCallTimeout, MaxResponseBytes: DefaultMaxResponseBytes}, "tool"},
		{"mcp://h:1/events/tool?transport=sse", Config{Transport: "sse", Endpoint: "http://h:1/events", Timeout: DefaultCallTimeout, MaxResponseBytes: DefaultMaxResponseBytes}, "tool"},
		{"mcp://localhost:8181/_unused?timeout=0", Config{Transport: "http", Endpoint: "http://localhost:8181", FindPath: true, Timeout: -1, MaxResponseBytes: DefaultMaxResponseBytes}, "_unused"},
		{"mcp://localhost:8181", Config{Transport: "http", Endpoint: "http://localhost:8181", FindPath: true, Timeout: DefaultCallTimeout, MaxResponseBytes: DefaultMaxResponseBytes}, ""},
		{"mcp:///usr/local/bin/mcp-fs/read_file?transport=stdio", Config{Transport: "stdio", Command: "/usr/local/bin/mcp-fs", Timeout: DefaultCallTimeout, MaxResponseBytes: DefaultMaxResponseBytes}, "read_file"},
		{"mcp://npx/echo?transport=stdio&args=-y&args=some+server&env=A=1&env=B=x%3Dy", Config{Transport: "stdio", Command: "npx", Args: []string{"-y", "some server"}, Env: []string{"A=1", "B=x=y"}, Timeout: DefaultCallTimeout, MaxResponseBytes: DefaultMaxResponseBytes}, "echo"},
		{"mcp://h:1/my%20tool", Config{Transport: "http", Endpoint: "http://h:1", FindPath: true, Timeout: DefaultCallTimeout, MaxResponseBytes: DefaultMaxResponseBytes}, "my tool"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := uri.Parse(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			cfg, tool, err := ParseURI(u)
			if err != nil {
				t.Fatalf("ParseURI: %v", err)
			}
			if !reflect.DeepEqual(cfg, tc.want) || tool != tc.tool {
				t.Fatalf("got %+v tool %q\nwant %+v tool %q", cfg, tool, tc.want, tc.tool)
			}
		})
	}
}

func TestParseClientURIErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, want string }{
		{"mcp://h:1/t?transport=grpc", `option transport="grpc" is not one of the allowed values (use http, sse or stdio)`},
		{"mcp://h:1/t?tranport=sse", `unknown option "tranport" (did you mean "transport"?)`},
		{"mcp://srv/t?transport=stdio&env=s3cret", "every env option"},
		{"mcp:///bin/srv/t", "needs a host:port address"},
		{"mcp://h:1/t?scheme=ftp", "use http or https"},
		{"mcp://h:1/t?timeout=soon", "not a duration"},
		{"mcp://h:1/t?timeout=-1s", "must not be negative"},
		{"mcp://h:1/t?args=x", "stdio only"},
		{"mcp:///t?transport=stdio", "needs the server executable"},
		{"mcp://srv/t?transport=stdio&env=NOVALUE", "env=NAME=value"},
		{"mcp://srv/t?transport=stdio&scheme=https", "not stdio"},
		{"http://h:1/t", "not an mcp:// URI"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := uri.Parse(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = ParseURI(u)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseAuth(t *testing.T) {
	t.Setenv("HELIX_TEST_CLIENT_SECRET", "from-env")
	got, err := ParseAuth(map[string]any{
		"type": "oauth2", "token_url": "https://auth/token", "client_id": "id",
		"client_secret": "${env:HELIX_TEST_CLIENT_SECRET}", "scopes": []any{"a", "b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &AuthConfig{Type: AuthOAuth2, TokenURL: "https://auth/token", ClientID: "id", ClientSecret: "from-env", Scopes: []string{"a", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	got, err = ParseAuth(map[string]any{"type": "oauth2", "token_url": "u", "client_id": "i", "client_secret": "s", "scopes": "a, b c"})
	if err != nil || !reflect.DeepEqual(got.Scopes, []string{"a", "b", "c"}) {
		t.Fatalf("scopes from a string: %+v, %v", got, err)
	}

	for _, tc := range []struct {
		in   map[string]any
		want string
	}{
		{nil, "empty block"},
		{map[string]any{"token": "x"}, "type is required"},
		{map[string]any{"type": "basic"}, `unknown type "basic"`},
		{map[string]any{"type": "bearer"}, "needs token"},
		{map[string]any{"type": "bearer", "token": "x", "tokn": "y"}, "unknown key(s) tokn"},
		{map[string]any{"type": "api-key", "header": "X-K"}, "needs key"},
		{map[string]any{"type": "oauth2", "token_url": "u"}, "needs client_id"},
		{map[string]any{"type": "mtls", "cert_file": "c"}, "needs key_file"},
		{map[string]any{"type": "bearer", "token": "${env:HELIX_TEST_SURELY_UNSET}"}, "HELIX_TEST_SURELY_UNSET is not set"},
		{map[string]any{"type": "bearer", "token": []any{"x"}}, "token must be a string"},
		{map[string]any{"type": "oauth2", "token_url": "u", "client_id": "i", "client_secret": "s", "scopes": []any{1}}, "scopes[0] must be a string"},
	} {
		if _, err := ParseAuth(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseAuth(%v) err = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestProtocolErrorClassification(t *testing.T) {
	t.Parallel()
	toolErr := &jsonrpc.Error{Code: -32602, Message: "unknown tool"}
	rejected := &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name     string
		err      error
		ctx      context.Context
		protocol bool
		gone     bool
	}{
		{"server answer", fmt.Errorf("calling: %w", toolErr), ctx, true, false},
		{"http rejection with a json-rpc body", fmt.Errorf("POST: %w: %w: Bad Request", &jsonrpc.Error{Code: -32000, Message: "no session"}, rejected), ctx, false, true},
		{"connection closed", fmt.Errorf("%w: calling tools/call", sdk.ErrConnectionClosed), ctx, false, true},
		{"session missing", sdk.ErrSessionMissing, ctx, false, true},
		{"plain transport error", errors.New("dial tcp: connection refused"), ctx, false, true},
		{"caller cancelled", errors.New("dial tcp: connection refused"), cancelled, false, false},
		{"client closed", errClientClosed, ctx, false, false},
		{"json-rpc error while connecting", fmt.Errorf("call: %w", &connectError{target: "x", err: toolErr}), ctx, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := protocolError(tc.err) != nil; got != tc.protocol {
				t.Errorf("protocolError = %v, want %v", got, tc.protocol)
			}
			if got := sessionGone(tc.ctx, tc.err); got != tc.gone {
				t.Errorf("sessionGone = %v, want %v", got, tc.gone)
			}
		})
	}
}

// TestConnectBackoff checks that failed connects are retried only after a window that
// doubles per failure (capped), that calls inside it fail fast without touching the
// server, and that a success resets it.
func TestConnectBackoff(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	var healthy atomic.Bool
	srv := sdk.NewServer(&sdk.Implementation{Name: "backoff", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if !healthy.Load() {
			http.Error(w, "down for maintenance", http.StatusForbidden)
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
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	conn.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()

	wantWindows := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	for i, window := range wantWindows {
		before := requests.Load()
		_, err := conn.CallTool(ctx, "ping", nil)
		if err == nil || requests.Load() == before {
			t.Fatalf("attempt %d: err = %v, requests %d→%d: want a real, failing connect", i, err, before, requests.Load())
		}
		before = requests.Load()
		_, err = conn.CallTool(ctx, "ping", nil)
		if err == nil || !strings.Contains(err.Error(), "next attempt allowed in "+window.String()) {
			t.Fatalf("attempt %d: fast-fail err = %v, want window %s", i, err, window)
		}
		if !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("fast-fail err = %v, want the last connect error in it", err)
		}
		if requests.Load() != before {
			t.Fatalf("a call inside the backoff window reached the server")
		}
		advance(window)
	}
	for range 10 { // the window stops growing at the cap
		advance(connectBackoffMax)
		_, _ = conn.CallTool(ctx, "ping", nil)
	}
	if _, err := conn.CallTool(ctx, "ping", nil); err == nil || !strings.Contains(err.Error(), "in "+connectBackoffMax.String()) {
		t.Fatalf("after many failures err = %v, want the %s cap", err, connectBackoffMax)
	}

	healthy.Store(true)
	advance(connectBackoffMax)
	res, err := conn.CallTool(ctx, "ping", nil)
	if err != nil {
		t.Fatalf("call once the server is healthy: %v", err)
	}
	if body, _ := BodyFromResult(res); body != "pong" {
		t.Fatalf("body = %q", body)
	}
	conn.mu.Lock()
	b := conn.backoff
	conn.mu.Unlock()
	if b != 0 {
		t.Fatalf("backoff after success = %s, want reset", b)
	}
}

// TestSharedSessionConcurrentCalls runs many concurrent calls through one producer
// and checks they share one session (one initialize) and all get their own answer.
func TestSharedSessionConcurrentCalls(t *testing.T) {
	t.Parallel()
	var inits atomic.Int64
	srv := sdk.NewServer(&sdk.Implementation{Name: "shared", Version: "1"}, &sdk.ServerOptions{
		InitializedHandler: func(context.Context, *sdk.InitializedRequest) { inits.Add(1) },
	})
	type in struct {
		N int `json:"n"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "double"}, func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(a.N * 2)}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	comp := New()
	var producers []component.Producer
	// Two URIs on the same server share one session.
	for _, raw := range []string{"mcp://" + strings.TrimPrefix(hs.URL, "http://") + "/double", "mcp://" + strings.TrimPrefix(hs.URL, "http://") + "/other?timeout=10s"} {
		u, _ := uri.Parse(raw)
		ep, err := comp.CreateEndpoint(u)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ep.CreateProducer()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		producers = append(producers, p)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{"n": i})
			ex.In().SetHeader(exchange.HeaderMcpToolName, "double")
			if err := producers[i%2].Process(context.Background(), ex); err != nil {
				errs <- err
				return
			}
			if got := ex.In().Body(); got != fmt.Sprint(i*2) {
				errs <- fmt.Errorf("call %d: body %v", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := inits.Load(); n != 1 {
		t.Errorf("%d sessions initialized, want 1 shared", n)
	}
	for _, p := range producers {
		if err := p.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}
	comp.mu.Lock()
	left := len(comp.conns)
	comp.mu.Unlock()
	if left != 0 {
		t.Errorf("%d connections left after every producer stopped", left)
	}
}

func TestClientProducerErrors(t *testing.T) {
	t.Parallel()
	comp := New()
	u, _ := uri.Parse("mcp://127.0.0.1:1")
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ep.CreateConsumer(nil); !errors.Is(err, component.ErrProducerOnly) {
		t.Fatalf("CreateConsumer err = %v, want ErrProducerOnly", err)
	}
	p, _ := ep.CreateProducer()
	if err := p.Process(context.Background(), exchange.New(exchange.InOut)); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("Process before Start: %v", err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	err = p.Process(context.Background(), exchange.New(exchange.InOut))
	if err == nil || !strings.Contains(err.Error(), "no tool to call") || !strings.Contains(err.Error(), exchange.HeaderMcpToolName) {
		t.Fatalf("no tool: err = %v", err)
	}
	u3, _ := uri.Parse("mcp://h:1/t?throwExceptionOnFailure=maybe")
	if _, err := comp.CreateEndpoint(u3); err == nil || !strings.Contains(err.Error(), "not a boolean") {
		t.Fatalf("bad throwExceptionOnFailure: err = %v", err)
	}
	u2, _ := uri.Parse("mcp:///bin/srv/t?transport=stdio")
	if _, err := comp.EndpointWithAuth(u2, &AuthConfig{Type: AuthBearer, Token: "x"}); err == nil || !strings.Contains(err.Error(), "not stdio") {
		t.Fatalf("auth on stdio: err = %v", err)
	}
}

// TestToolErrorResultAndTimeout uses an in-process go-sdk server: a tool result with
// isError and no text gets the spec's fallback message, and a call that outlives the
// URI's timeout fails with the timeout named, after the server saw the cancellation.
func TestToolErrorResultAndTimeout(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "errs", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "fail-silently", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "fail-loudly", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil
		})
	var once sync.Once
	srv.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			once.Do(func() { close(cancelled) })
			return nil, ctx.Err()
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	addr := strings.TrimPrefix(hs.URL, "http://")

	// run calls the URI's tool once; the producer is stopped when the test ends, not
	// right after the call: stopping closes the session, and a cancellation that has not
	// reached the server by then never will.
	run := func(raw string) (*exchange.Exchange, error) {
		u, _ := uri.Parse(raw)
		ep, err := NewEndpoint(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := ep.CreateProducer()
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		ex := exchange.NewWithBody(exchange.InOut, "payload")
		err = p.Process(context.Background(), ex)
		if err == nil {
			err = ex.Exception()
		}
		return ex, err
	}

	ex, err := run("mcp://" + addr + "/fail-silently")
	var te *ToolError
	if !errors.As(err, &te) || te.Protocol || ex.In().Body() != MsgToolErrorNoText || ex.In().HeaderString(exchange.HeaderMcpIsError) != "true" {
		t.Fatalf("isError without text: err %v body %q", err, ex.In().Body())
	}
	ex, err = run("mcp://" + addr + "/fail-loudly")
	if !errors.As(err, &te) || ex.In().Body() != "disk full" || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("isError with text: err %v body %q", err, ex.In().Body())
	}
	ex, err = run("mcp://" + addr + "/slow?timeout=300ms")
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") || errors.As(err, &te) {
		t.Fatalf("slow tool: err = %v, want a timeout (not a tool error)", err)
	}
	if ex.In().Body() != "payload" {
		t.Errorf("body after a timeout = %#v, want it untouched", ex.In().Body())
	}
	select {
	case <-cancelled:
	case <-time.After(testtools.StartupBound):
		t.Fatal("the server never saw the call cancelled")
	}
}

func TestToolOverride(t *testing.T) {
	t.Parallel()
	fromServer := func() *exchange.Exchange {
		ex := exchange.New(exchange.InOut)
		ex.In().SetHeader(exchange.HeaderMcpToolName, "research_topic")
		ex.In().SetHeader(exchange.HeaderMcpRouteID, "research-topic")
		ex.In().SetHeader(exchange.HeaderMcpServerName, "orchestrator")
		return ex
	}
	for _, tc := range []struct {
		name       string
		ex         func() *exchange.Exchange
		uriHasTool bool
		want       string
	}{
		{"no header", func() *exchange.Exchange { return exchange.New(exchange.InOut) }, true, ""},
		{"set by the workflow", func() *exchange.Exchange {
			ex := exchange.New(exchange.InOut)
			ex.In().SetHeader(exchange.HeaderMcpToolName, " analyze-generic ")
			return ex
		}, true, "analyze-generic"},
		{"incoming tool name is not an override", fromServer, true, ""},
		{"incoming tool name changed by the workflow", func() *exchange.Exchange {
			ex := fromServer()
			ex.In().SetHeader(exchange.HeaderMcpToolName, "other")
			return ex
		}, true, "other"},
		{"incoming tool name with no tool in the URI: pass-through", fromServer, false, "research_topic"},
		{"written by an earlier mcp:// call", func() *exchange.Exchange {
			ex := exchange.New(exchange.InOut)
			ex.In().SetHeader(exchange.HeaderMcpToolName, "search")
			ex.SetVariable(VariableMcpToolNameWritten, "search")
			return ex
		}, true, ""},
		{"reset by the workflow after an earlier call", func() *exchange.Exchange {
			ex := exchange.New(exchange.InOut)
			ex.In().SetHeader(exchange.HeaderMcpToolName, "summarize")
			ex.SetVariable(VariableMcpToolNameWritten, "search")
			return ex
		}, true, "summarize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := toolOverride(tc.ex(), tc.uriHasTool); got != tc.want {
				t.Fatalf("toolOverride = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSequentialTargets checks that a second mcp:// target calls its own tool, not the
// one the first target reported in HelixMcpToolName.
func TestSequentialTargets(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "seq", Version: "1"}, nil)
	var identity atomic.Value
	for _, name := range []string{"first", "second"} {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil {
					identity.Store(ip.ClientInfo.Name + "/" + ip.ClientInfo.Version)
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " saw " + string(req.Params.Arguments)}}}, nil
			})
	}
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	addr := strings.TrimPrefix(hs.URL, "http://")
	comp := New()
	var steps []component.Producer
	for _, tool := range []string{"first", "second"} {
		u, _ := uri.Parse("mcp://" + addr + "/" + tool)
		ep, err := comp.CreateEndpoint(u)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := ep.CreateProducer()
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		steps = append(steps, p)
	}
	ex := exchange.NewWithBody(exchange.InOut, `{"n":1}`)
	for _, p := range steps {
		if err := p.Process(context.Background(), ex); err != nil {
			t.Fatal(err)
		}
	}
	if got := ex.In().Body(); got != `second saw {"input":"first saw {\"n\":1}"}` {
		t.Fatalf("body = %q", got)
	}
	if got := ex.In().HeaderString(exchange.HeaderMcpToolName); got != "second" {
		t.Fatalf("HelixMcpToolName = %q, want second", got)
	}
	if got, _ := identity.Load().(string); got != "helix-mcp-client/1.0.0" {
		t.Fatalf("client identity seen by the server = %q, want helix-mcp-client/1.0.0", got)
	}
}
