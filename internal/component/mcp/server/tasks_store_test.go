package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// MCP Tasks on the real durable store (SQLite under a data dir): what one
// process created is served by the next one on the same store.

// storeApp is one "process": an engine whose task tools' workflows are
// durable, its durable runtime on dir, and a stateless MCP server.
type storeApp struct {
	comp *server.Component
	hc   *engine.Context
	rt   *durable.Runtime
}

// startStoreApp starts a storeApp on dir; release, when not nil, is what the
// "hold" tool waits for (a workflow still running when the process stops).
func startStoreApp(t *testing.T, dir string, release <-chan struct{}) *storeApp {
	t.Helper()
	return startStoreAppOn(t, durable.Options{AppName: "tasks", DataDir: dir}, release)
}

// startStoreAppOn is startStoreApp on the store o names (a PostgreSQL store
// shared by replicas: o.Store and o.ReplicaID).
func startStoreAppOn(t *testing.T, o durable.Options, release <-chan struct{}) *storeApp {
	t.Helper()
	hc := engine.NewContext("tasks")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	for _, wf := range taskWorkflows(hc) {
		wf.Durable = wf.ID != "greet"
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	hold := &engine.Workflow{ID: "hold", FromURI: "direct://hold", Durable: true, Processors: []engine.Processor{
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			ex.In().SetBody("held until released")
			return nil
		})}}
	if err := hc.AddWorkflow(hold); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o.Logger = slog.New(slog.DiscardHandler)
	rt, err := durable.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	hc.SetDurableRunner(rt)
	durable.Attach(hc, rt)
	comp := server.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(server.Options{ID: "tasks", Addr: "127.0.0.1:0", Stateless: true}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Launch(hc); err != nil {
		t.Fatal(err)
	}
	a := &storeApp{comp: comp, hc: hc, rt: rt}
	t.Cleanup(a.stop)
	return a
}

// stop stops the process: runs in flight stay pending in the store.
func (a *storeApp) stop() {
	if a.rt == nil {
		return
	}
	// The runtime first: a run it leaves is pending, not failed by the engine's stop.
	a.rt.Shutdown(time.Second)
	_ = a.hc.Stop(context.Background())
	durable.Attach(a.hc, nil)
	a.rt = nil
}

// storeRPC is taskRPC to the storeApp's server (no principal: no auth).
func (a *storeApp) rpc(t *testing.T, caps map[string]any, method string, params map[string]any) rpcReply {
	t.Helper()
	return taskRPC(t, a.comp, nil, caps, method, params)
}

func TestTasksFromTheDurableStoreAcrossARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	release := make(chan struct{})
	a := startStoreApp(t, dir, release)

	done := createTask(t, a.comp, nil, "slow", map[string]any{"ms": 10})
	if got := taskText(t, awaitTask(t, a.comp, nil, done, "completed")); got != "slept 10ms" {
		t.Fatalf("result %q", got)
	}
	cancelled := createTask(t, a.comp, nil, "slow", map[string]any{"ms": 60000})
	if r := a.rpc(t, withTask, "tasks/cancel", map[string]any{"taskId": cancelled}); r.Error != nil || r.Result["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %+v %v", r.Error, r.Result)
	}
	awaitTask(t, a.comp, nil, cancelled, "cancelled")
	asking := createTask(t, a.comp, nil, "confirm", nil)
	awaitTask(t, a.comp, nil, asking, "input_required")
	held := createTask(t, a.comp, nil, "hold", nil)
	a.stop() // "held" is still running: it stays pending in the store

	close(release)
	b := startStoreApp(t, dir, release)
	if got := taskText(t, awaitTask(t, b.comp, nil, done, "completed")); got != "slept 10ms" {
		t.Fatalf("result after the restart %q", got)
	}
	awaitTask(t, b.comp, nil, cancelled, "cancelled")
	// The run cut off by the stop is recovered and ends.
	if got := taskText(t, awaitTask(t, b.comp, nil, held, "completed")); got != "held until released" {
		t.Fatalf("recovered run %q", got)
	}
	// The question asked before the restart is answered after it.
	got := awaitTask(t, b.comp, nil, asking, "input_required")
	if _, ok := got["inputRequests"].(map[string]any)["confirm"]; !ok {
		t.Fatalf("inputRequests after the restart: %v", got["inputRequests"])
	}
	answer := map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
	if r := b.rpc(t, withTask, "tasks/update", map[string]any{"taskId": asking, "inputResponses": answer}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := taskText(t, awaitTask(t, b.comp, nil, asking, "completed")); got != `answered {"confirm":true}` {
		t.Fatalf("answered task %q", got)
	}
	if r := b.rpc(t, withTask, "tasks/get", map[string]any{"taskId": "task-" + fmt.Sprint(time.Now().UnixNano())}); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("unknown task after the restart: %+v", r.Error)
	}
}

// Two replicas on one PostgreSQL store: a task created through one is followed,
// answered and cancelled through the other.
func TestTasksAcrossReplicasOnPostgres(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	a := startStoreAppOn(t, durable.Options{AppName: "tasks", DataDir: t.TempDir(), Store: url, ReplicaID: "a"}, nil)
	b := startStoreAppOn(t, durable.Options{AppName: "tasks", DataDir: t.TempDir(), Store: url, ReplicaID: "b"}, nil)

	done := createTask(t, a.comp, nil, "slow", map[string]any{"ms": 10})
	if got := taskText(t, awaitTask(t, b.comp, nil, done, "completed")); got != "slept 10ms" {
		t.Fatalf("result through the other replica %q", got)
	}
	asking := createTask(t, a.comp, nil, "confirm", nil)
	awaitTask(t, b.comp, nil, asking, "input_required")
	answer := map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": false}}}
	if r := b.rpc(t, withTask, "tasks/update", map[string]any{"taskId": asking, "inputResponses": answer}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := taskText(t, awaitTask(t, a.comp, nil, asking, "completed")); got != `answered {"confirm":false}` {
		t.Fatalf("answered through the other replica %q", got)
	}
	long := createTask(t, b.comp, nil, "slow", map[string]any{"ms": 60000})
	if r := a.rpc(t, withTask, "tasks/cancel", map[string]any{"taskId": long}); r.Error != nil {
		t.Fatal(r.Error)
	}
	awaitTask(t, b.comp, nil, long, "cancelled")
}
