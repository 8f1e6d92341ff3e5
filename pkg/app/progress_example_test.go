package app_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// examples/mcp-progress.yaml runs as its comments say: a client with a progress
// token and a log level receives a progress notification per row and the script's
// log messages at or above its level; the result is the same without them.
func TestMCPProgressExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../examples/mcp-progress.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const exampleAddr = `addr: "127.0.0.1:${env:MCP_PROGRESS_PORT:-3200}"`
	if !strings.Contains(string(src), exampleAddr) {
		t.Fatalf("examples/mcp-progress.yaml no longer contains %s; update this test", exampleAddr)
	}
	a, err := buildYAML(t, strings.Replace(string(src), exampleAddr, `addr: "127.0.0.1:0"`, 1))
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)

	var mu sync.Mutex
	var got []string
	client := sdk.NewClient(&sdk.Implementation{Name: "example-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("progress %g/%g %s", req.Params.Progress, req.Params.Total, req.Params.Message))
		},
		//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%s %v", req.Params.Level, req.Params.Data))
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A 2025-11-25 session: logging/setLevel sets its level (2026-07-28 sends it per request).
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: serverURL(t, a, "progress-demo") + "/mcp", MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	args := map[string]any{"rows": []any{"a", "", "c"}}
	const want = `{"imported":["A","","C"]}`

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "import-rows", Arguments: args})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != want {
		t.Fatalf("plain call: %v %+v", err, res)
	}

	//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "notice"}); err != nil {
		t.Fatal(err)
	}
	params := &sdk.CallToolParams{Name: "import-rows", Arguments: args}
	params.SetProgressToken("example")
	res, err = cs.CallTool(ctx, params)
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != want {
		t.Fatalf("call with progress: %v %+v", err, res)
	}
	wantNotes := []string{"progress 1/3 row 1", "progress 2/3 row 2", "warning map[skipped:1]", "progress 3/3 row 3", "notice imported 3 rows"}
	deadline := time.Now().Add(testtools.StartupBound)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(wantNotes) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// Progress and log messages are handled by separate client queues: compare the
	// order within each kind.
	if notes, want := kinds(got), kinds(wantNotes); notes != want {
		t.Fatalf("notifications\n  %q\nwant\n  %q", got, wantNotes)
	}
}

// kinds lists the progress notifications, then the log messages, each in order.
func kinds(notes []string) string {
	var progress, logs []string
	for _, n := range notes {
		if strings.HasPrefix(n, "progress ") {
			progress = append(progress, n)
		} else {
			logs = append(logs, n)
		}
	}
	return strings.Join(progress, "|") + " / " + strings.Join(logs, "|")
}
