package mcptools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/mcptools"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/internal/tool"
)

func names(tools []*tool.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func find(t *testing.T, tools []*tool.Tool, name string) *tool.Tool {
	t.Helper()
	for _, x := range tools {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("no tool %q among %v", name, names(tools))
	return nil
}

func call(t *testing.T, x *tool.Tool, args string) tool.Result {
	t.Helper()
	res, cause := x.Call(context.Background(), json.RawMessage(args))
	if cause != nil {
		t.Fatalf("call %s: %v", x.Name, cause)
	}
	return res
}

func TestListsToolsAndSkipsBrokenOnes(t *testing.T) {
	ts := serveHTTP(t, testServer())
	var logs testtools.SyncBuffer
	s := newServer(t, mcptools.Options{Name: "MCP server test-tools", Conn: mcpclient.Config{
		Endpoint: ts.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Seven tools (the server lists them by name) over four pages; the two broken
	// ones skipped.
	if got, want := names(tools), []string{"echo", "fail", "gone", "media", "weather"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	for _, skipped := range []string{`tool="bad name!"`, "tool=stringy"} {
		if !strings.Contains(logs.String(), skipped) {
			t.Errorf("no warning for %s in logs:\n%s", skipped, logs.String())
		}
	}
	echo := find(t, tools, "echo")
	if echo.ID != "echo" || echo.Description != "echoes text" || echo.Annotations == nil || !echo.Annotations.ReadOnlyHint {
		t.Errorf("echo = %+v", echo)
	}
	var schema map[string]any
	if err := json.Unmarshal(echo.InputSchema, &schema); err != nil || schema["properties"] == nil {
		t.Errorf("echo input schema %s (%v), want the server's", echo.InputSchema, err)
	}
	if w := find(t, tools, "weather"); !bytes.Contains(w.OutputSchema, []byte(`"required":["temp"]`)) {
		t.Errorf("weather output schema %s, want the server's", w.OutputSchema)
	}
	// The tools are compiled: a Set accepts them, and the same ones come back.
	if _, err := tool.NewSet(tools); err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	again, err := s.Tools(context.Background())
	if err != nil || &again[0] != &tools[0] {
		t.Errorf("second Tools call listed again (err %v)", err)
	}
	set1, _ := s.ToolSet(context.Background())
	set2, _ := s.ToolSet(context.Background())
	if set1 == nil || set1 != set2 {
		t.Error("ToolSet gave different sets for the same tools")
	}
}

func TestIncludeExclude(t *testing.T) {
	ts := serveHTTP(t, testServer())
	for _, tc := range []struct {
		include, exclude []string
		want             []string
	}{
		{include: []string{"e*", "weather"}, want: []string{"echo", "weather"}},
		{exclude: []string{"*e*"}, want: []string{"fail"}},
		{include: []string{"[a-f]*"}, exclude: []string{"fail"}, want: []string{"echo"}},
		{include: []string{"nothing"}, want: []string{}},
	} {
		s := newServer(t, mcptools.Options{Conn: httpConfig(ts.URL), Include: tc.include, Exclude: tc.exclude})
		tools, err := s.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := names(tools); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("include %v exclude %v: tools %v, want %v", tc.include, tc.exclude, got, tc.want)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts mcptools.Options
		want string
	}{
		{mcptools.Options{Name: "MCP server x", Conn: httpConfig("http://127.0.0.1:1"), Include: []string{"[a-"}}, `MCP server x: tool name pattern "[a-"`},
		{mcptools.Options{Name: "MCP server x", Conn: httpConfig("http://127.0.0.1:1"), Exclude: []string{"\\"}}, `tool name pattern "\\"`},
		{mcptools.Options{Name: "MCP server x", Conn: mcpclient.Config{Transport: "carrier-pigeon", Endpoint: "http://x"}}, `unknown transport "carrier-pigeon"`},
		{mcptools.Options{Name: "MCP server x", Conn: mcpclient.Config{Transport: mcpclient.TransportStdio}}, "needs a command"},
		{mcptools.Options{Conn: mcpclient.Config{Endpoint: "ftp://h"}}, "MCP server (ftp://h)"},
	} {
		_, err := mcptools.New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
}

func TestCallResults(t *testing.T) {
	srv := testServer()
	ts := serveHTTP(t, srv)
	s := newServer(t, mcptools.Options{Name: "MCP server test-tools", Conn: httpConfig(ts.URL)})
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("text", func(t *testing.T) {
		res := call(t, find(t, tools, "echo"), `{"text":"hi"}`)
		if res.IsError || !reflect.DeepEqual(res.Content, []tool.Content{tool.Text("echo: hi")}) {
			t.Errorf("result %+v", res)
		}
	})
	t.Run("isError", func(t *testing.T) {
		res := call(t, find(t, tools, "fail"), `{}`)
		if !res.IsError || len(res.Content) != 1 || res.Content[0].Text != "disk full" {
			t.Errorf("result %+v, want the tool's error", res)
		}
	})
	t.Run("media", func(t *testing.T) {
		res := call(t, find(t, tools, "media"), `{}`)
		want := []tool.Content{
			{Type: tool.ContentImage, Data: []byte("\x89PNG"), MIMEType: "image/png"},
			{Type: tool.ContentAudio, Data: []byte("RIFF"), MIMEType: "audio/wav"},
			{Type: tool.ContentResource, URI: "file:///notes.txt", MIMEType: "text/plain", Text: "notes"},
			{Type: tool.ContentResource, URI: "file:///a.bin", MIMEType: "application/octet-stream", Data: []byte{1, 2, 3}},
			tool.Text(`Resource link "report": https://example.com/report.pdf (application/pdf, 1234 bytes) - the report`),
		}
		if res.IsError || !reflect.DeepEqual(res.Content, want) {
			t.Errorf("content\n got %+v\nwant %+v", res.Content, want)
		}
	})
	t.Run("structured", func(t *testing.T) {
		res := call(t, find(t, tools, "weather"), `{}`)
		if res.IsError || !reflect.DeepEqual(res.Structured, map[string]any{"temp": 21.5}) {
			t.Errorf("result %+v, want structured {temp: 21.5}", res)
		}
	})
	t.Run("unknown tool", func(t *testing.T) {
		// The server drops a tool it listed: the call gets a JSON-RPC error, which
		// the model reads as the tool's failure.
		srv.RemoveTools("gone")
		res, cause := find(t, tools, "gone").Call(context.Background(), nil)
		if cause != nil {
			t.Fatalf("cause %v, want an error result, not a Go error", cause)
		}
		if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "MCP server test-tools refused the call of tool gone") ||
			!strings.Contains(res.Content[0].Text, "gone") {
			t.Errorf("result %+v", res)
		}
	})
}

func TestDiscoveryRetriedUntilServerIsUp(t *testing.T) {
	addr := freeAddr(t)
	s := newServer(t, mcptools.Options{Name: "MCP server later", Conn: httpConfig("http://" + addr)})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start of an http server dialled it: %v", err)
	}
	_, err := s.Tools(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "MCP server later: discover tools:") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want a discovery failure naming the server", err)
	}

	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	srv := testServer()
	ts := httptest.NewUnstartedServer(streamable(srv))
	ts.Listener = l
	ts.Start()
	cleanup(t, srv, ts)

	// The connection refuses to dial again inside its backoff window (100ms after
	// the first failure); past it, discovery succeeds.
	deadline := time.Now().Add(5 * time.Second)
	for {
		tools, err := s.Tools(context.Background())
		if err == nil {
			if len(tools) != 5 {
				t.Fatalf("tools %v", names(tools))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTransportFailureIsAnErrorWithoutSecrets(t *testing.T) {
	ts := serveHTTP(t, testServer())
	const token = "s3cr3t-token-value"
	s := newServer(t, mcptools.Options{Name: "MCP server secure", Conn: mcpclient.Config{
		Endpoint: ts.URL, Auth: &mcpclient.AuthConfig{Type: mcpclient.AuthBearer, Token: token}}})
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	echo := find(t, tools, "echo")
	ts.Close()
	res, cause := echo.Call(context.Background(), json.RawMessage(`{"text":"`+token+`"}`))
	if cause == nil || !res.IsError {
		t.Fatalf("result %+v, cause %v: want a failure", res, cause)
	}
	if !strings.HasPrefix(cause.Error(), "MCP server secure: ") {
		t.Errorf("cause %q does not name the server", cause)
	}
	if strings.Contains(cause.Error(), token) || strings.Contains(res.Content[0].Text, token) {
		t.Errorf("token leaked: %q / %q", cause, res.Content[0].Text)
	}
}

func TestConcurrentFirstCallsDiscoverOnce(t *testing.T) {
	count := 0
	var mu sync.Mutex
	srv := testServer()
	h := streamable(srv)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/list"`)) && !bytes.Contains(body, []byte(`"cursor"`)) {
			mu.Lock()
			count++
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	cleanup(t, srv, ts)
	s := newServer(t, mcptools.Options{Conn: httpConfig(ts.URL)})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := s.Tools(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if count != 1 {
		t.Errorf("tools/list asked %d times, want once", count)
	}
}

func TestStopThenStart(t *testing.T) {
	ts := serveHTTP(t, testServer())
	s := newServer(t, mcptools.Options{Name: "MCP server x", Conn: httpConfig(ts.URL)})
	if _, err := s.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "MCP server x is stopped") {
		t.Fatalf("Tools after Stop: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, find(t, tools, "echo"), `{"text":"again"}`); res.Content[0].Text != "echo: again" {
		t.Errorf("result %+v", res)
	}
}

// The call's context reaches the connection: progress the server reports during a
// call arrives at the caller's reporter.
func TestProgressReachesTheCaller(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "progress", Version: "1"}, &sdk.ServerOptions{Logger: quiet})
	srv.AddTool(&sdk.Tool{Name: "slow", InputSchema: objectSchema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"}); err != nil {
					return nil, err
				}
			}
			return &sdk.CallToolResult{Content: text("done")}, nil
		})
	ts := serveHTTP(t, srv)
	s := newServer(t, mcptools.Options{Conn: httpConfig(ts.URL)})
	tools, err := s.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	ctx := report.WithReporter(context.Background(), report.Func{OnProgress: func(_ context.Context, current, total float64, message string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%g/%g %s", current, total, message))
	}})
	res, cause := find(t, tools, "slow").Call(ctx, nil)
	if cause != nil || res.IsError {
		t.Fatalf("res %+v, cause %v", res, cause)
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(got, []string{"1/2 half"}) {
		t.Errorf("progress reported %q, want [1/2 half]", got)
	}
}
