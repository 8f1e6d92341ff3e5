package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// TestCancelReachesChildMCPCalls: a client cancels a tool call whose workflow is
// waiting on an mcp:// call to another server. The cancellation must travel down:
// the workflow's exchange is cancelled, and with it the child call, whose server
// receives notifications/cancelled and sees its handler cancelled. The parent call
// is made once plainly (Helix's fast path) and once with a progress token (the
// go-sdk session).
func TestCancelReachesChildMCPCalls(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	handlerCancelled := make(chan struct{}, 1)
	var cancelNotes atomic.Int32
	child := sdk.NewServer(&sdk.Implementation{Name: "child", Version: "1"}, nil)
	child.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/cancelled" {
				cancelNotes.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	sdk.AddTool(child, &sdk.Tool{Name: "slow", Description: "waits until cancelled"},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				handlerCancelled <- struct{}{}
				return nil, nil, ctx.Err()
			case <-time.After(2 * time.Minute):
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil, nil
			}
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return child }, nil))
	childHTTP := httptest.NewServer(mux)
	defer childHTTP.Close()
	childAddr := strings.TrimPrefix(childHTTP.URL, "http://")

	a, err := buildYAML(t, fmt.Sprintf(`
helix:
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: parent
workflows:
  - id: relay
    description: "Calls the child server's slow tool"
    trigger:
      uri: direct://relay
    steps:
      - target: mcp://%s/mcp/slow
`, childAddr))
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	cs := mcpSession(t, a, "parent")

	for _, token := range []any{nil, "cancel-me"} {
		notesBefore := cancelNotes.Load()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			params := &sdk.CallToolParams{Name: "relay", Arguments: map[string]any{}}
			if token != nil {
				params.SetProgressToken(token)
			}
			_, err := cs.CallTool(ctx, params)
			done <- err
		}()
		select {
		case <-started:
		case <-time.After(testtools.StartupBound):
			t.Fatalf("token %v: the child tool was never called", token)
		}
		cancel() // the go-sdk client sends notifications/cancelled to the parent
		if err := <-done; err == nil {
			t.Fatalf("token %v: the cancelled call returned a result", token)
		}
		select {
		case <-handlerCancelled:
		case <-time.After(testtools.StartupBound):
			t.Fatalf("token %v: the child call kept running after the client cancelled the parent call", token)
		}
		deadline := time.Now().Add(testtools.StartupBound)
		for cancelNotes.Load() == notesBefore && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if cancelNotes.Load() == notesBefore {
			t.Fatalf("token %v: the child server received no notifications/cancelled", token)
		}
	}
}

// TestChildMCPProgressReachesTheCaller: a tool whose workflow calls another
// server's tool through mcp:// passes that tool's progress on to its own caller —
// and asks the other server for progress only when its caller asked for it.
func TestChildMCPProgressReachesTheCaller(t *testing.T) {
	t.Parallel()
	var tokens []any
	var mu sync.Mutex
	child := sdk.NewServer(&sdk.Implementation{Name: "child", Version: "1"}, nil)
	sdk.AddTool(child, &sdk.Tool{Name: "steps", Description: "reports two steps"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			mu.Lock()
			tokens = append(tokens, token)
			mu.Unlock()
			if token != nil {
				for i := 1; i <= 2; i++ {
					if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i)}); err != nil {
						return nil, nil, err
					}
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "stepped"}}}, nil, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return child }, nil))
	childHTTP := httptest.NewServer(mux)
	defer childHTTP.Close()

	a, err := buildYAML(t, fmt.Sprintf(`
helix:
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: parent
workflows:
  - id: relay
    description: "Calls the child server's steps tool"
    trigger:
      uri: direct://relay
    steps:
      - target: mcp://%s/mcp/steps
`, strings.TrimPrefix(childHTTP.URL, "http://")))
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)

	var got []string
	var gotMu sync.Mutex
	client := sdk.NewClient(&sdk.Implementation{Name: "top", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			gotMu.Lock()
			defer gotMu.Unlock()
			got = append(got, fmt.Sprintf("%v %g/%g %s", req.Params.ProgressToken, req.Params.Progress, req.Params.Total, req.Params.Message))
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: serverURL(t, a, "parent") + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()

	// Without a progress token the child is asked for no progress.
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "relay", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("call without token: %v %+v", err, res)
	}
	params := &sdk.CallToolParams{Name: "relay", Arguments: map[string]any{}}
	params.SetProgressToken("top-1")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("call with token: %v %+v", err, res)
	}
	want := []string{"top-1 1/2 step 1", "top-1 2/2 step 2"}
	deadline := time.Now().Add(testtools.StartupBound)
	for {
		gotMu.Lock()
		n := len(got)
		gotMu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	gotMu.Lock()
	defer gotMu.Unlock()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("progress at the top\n  %q\nwant\n  %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) != 2 || tokens[0] != nil || tokens[1] == nil {
		t.Errorf("progress tokens the child saw: %v (want none, then one)", tokens)
	}
}
