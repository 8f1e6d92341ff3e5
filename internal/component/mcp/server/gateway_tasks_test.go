package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// relayExtension serves the tool "ext.job" and relays its tasks (as a
// gateway does): it knows the one task "ext-1".
type relayExtension struct{}

func (relayExtension) Attach(_ context.Context, host *server.ExtensionHost) error {
	return host.AddTool(&sdk.Tool{Name: "ext.job", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "plain"}}}, nil
		})
}
func (relayExtension) Middleware() sdk.Middleware { return nil }
func (relayExtension) Complete(context.Context, *sdk.CompleteRequest) (*sdk.CompleteResult, bool, error) {
	return nil, false, nil
}
func (relayExtension) Subscribe(context.Context, *sdk.SubscribeRequest) (bool, error) {
	return false, nil
}
func (relayExtension) Unsubscribe(context.Context, *sdk.UnsubscribeRequest) (bool, error) {
	return false, nil
}
func (relayExtension) Close(context.Context) error { return nil }
func (relayExtension) OffersTasks() bool           { return true }
func (relayExtension) TaskTool(name string) bool   { return name == "ext.job" }

func (relayExtension) Serve(_ context.Context, req *transport.TaskRequest) (any, *jsonrpc.Error, bool) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(req.Call.Params, &p)
	switch {
	case req.Call.Method == "tools/call":
		return map[string]any{"resultType": "task", "taskId": "ext-1", "status": "working"}, nil, true
	case req.Call.Method == "tasks/get" && p.TaskID == "ext-1":
		return map[string]any{"resultType": "complete", "taskId": "ext-1", "status": "completed"}, nil, true
	}
	return nil, nil, false
}

// A server with task tools of its own and an extension that relays tasks
// serves both: its own tools' tasks from its store, the extension's through
// the extension, and a task id neither holds as unknown.
func TestTasksOfTheServerAndOfItsExtension(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("tasks")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	cat := tool.NewCatalogue()
	for _, wf := range taskWorkflows(hc) {
		if wf.ID != "slow" {
			continue
		}
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
		tl, err := tool.FromWorkflow(hc, wf)
		if err != nil {
			t.Fatal(err)
		}
		tl.TaskSupport = tool.TaskOptional
		if err := cat.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	durable.Attach(hc, newMemRuns(hc))
	t.Cleanup(func() { durable.Attach(hc, nil) })
	stack, err := security.New(security.Config{APIKeys: []string{"key-a", "key-b"}, ServerID: "tasks"})
	if err != nil {
		t.Fatal(err)
	}
	comp := server.New(hc)
	comp.SetCatalogue(cat)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(server.Options{ID: "tasks", Addr: "127.0.0.1:0", Stateless: true, HTTPMiddleware: stack.Middleware,
		DisableLocalhostProtection: true, Extension: relayExtension{}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })

	own := createTask(t, comp, keyA, "slow", map[string]any{"ms": 1})
	if got := awaitTask(t, comp, keyA, own, "completed"); taskText(t, got) != "slept 1ms" {
		t.Errorf("the server's own task: %v", got)
	}
	if ext := createTask(t, comp, keyA, "ext.job", nil); ext != "ext-1" {
		t.Errorf("the extension's task is %q", ext)
	}
	if got := taskRPC(t, comp, keyA, withTask, "tasks/get", map[string]any{"taskId": "ext-1"}); got.Error != nil || got.Result["status"] != "completed" {
		t.Errorf("tasks/get of the extension's task: %+v %v", got.Error, got.Result)
	}
	if got := taskRPC(t, comp, keyA, withTask, "tasks/get", map[string]any{"taskId": "ext-2"}); got.Error == nil || got.Error.Code != -32602 {
		t.Errorf("tasks/get of a task no one holds: %+v %v", got.Error, got.Result)
	}
}
