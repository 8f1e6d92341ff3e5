package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// asksBeforeTask is a leading step asked before the task (as elicit:
// before_task is): its question names the call's argument; in the run it
// answers with the name it was given, or parks when it was given none.
type asksBeforeTask struct{}

var nameForm = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)

func (asksBeforeTask) BeforeTaskWait(ex *exchange.Exchange) (durable.Wait, bool, error) {
	args, _ := ex.In().Body().(map[string]any)
	return durable.Wait{Kind: durable.WaitElicit, Key: "name", Message: fmt.Sprintf("Your name, %v?", args["title"]), Schema: nameForm}, true, nil
}

func (asksBeforeTask) Process(ctx context.Context, ex *exchange.Exchange) error {
	r, ok := durable.ResolutionFor(ctx, "name")
	if !ok {
		return durable.Park(durable.Wait{Kind: durable.WaitElicit, Key: "name", Message: "Your name?", Schema: nameForm})
	}
	var content map[string]any
	_ = json.Unmarshal(r.Data, &content)
	ex.In().SetBody(fmt.Sprintf("Hello, %v", content["name"]))
	return nil
}

// A task tool whose workflow asks before the task: the call answers with the
// question (input required, no task, no run), a response off the form is
// -32602, and the call with the answer creates the task, which completes with
// the answer without ever waiting. All over the real SQLite store.
func TestTaskAsksBeforeItIsCreated(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("tasks")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	wf := &engine.Workflow{ID: "hello", FromURI: "direct://hello", Durable: true, Processors: []engine.Processor{asksBeforeTask{}}}
	if err := hc.AddWorkflow(wf); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := durable.New(ctx, durable.Options{AppName: "tasks", DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
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
	t.Cleanup(func() {
		rt.Shutdown(time.Second)
		_ = hc.Stop(context.Background())
		durable.Attach(hc, nil)
	})
	call := func(responses map[string]any) rpcReply {
		p := map[string]any{"name": "hello", "arguments": map[string]any{"title": "Dr"}}
		if responses != nil {
			p["inputResponses"] = responses
		}
		return taskRPC(t, comp, nil, withTask, "tools/call", p)
	}
	runs := func() int {
		list, err := rt.List(ctx, durable.Filter{Workflow: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}

	// Round 1: the question, asked in the call, on the call's input.
	r := call(nil)
	if r.Error != nil || r.Result["resultType"] != "input_required" || r.Result["taskId"] != nil {
		t.Fatalf("round 1: %+v %v", r.Error, r.Result)
	}
	reqs, _ := r.Result["inputRequests"].(map[string]any)
	q, _ := reqs["name"].(map[string]any)
	params, _ := q["params"].(map[string]any)
	if len(reqs) != 1 || q["method"] != "elicitation/create" || params["message"] != "Your name, Dr?" || params["requestedSchema"] == nil {
		t.Fatalf("round 1 inputRequests: %v", r.Result["inputRequests"])
	}
	if n := runs(); n != 0 {
		t.Fatalf("%d runs before the task was created", n)
	}

	// A response to something else asks again; one off the form is refused.
	if r = call(map[string]any{"other": map[string]any{"action": "accept"}}); r.Result["resultType"] != "input_required" {
		t.Fatalf("an unrelated response: %+v %v", r.Error, r.Result)
	}
	r = call(map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": 5}}})
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `"name"`) {
		t.Fatalf("an answer off the form: %+v %v", r.Error, r.Result)
	}
	if n := runs(); n != 0 {
		t.Fatalf("%d runs after a refused answer", n)
	}

	// Round 2: the answer creates the task, which ends with it.
	r = call(map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}})
	if r.Error != nil || r.Result["resultType"] != "task" || r.Result["requestState"] != nil || r.Result["inputRequests"] != nil {
		t.Fatalf("round 2: %+v %v", r.Error, r.Result)
	}
	id, _ := r.Result["taskId"].(string)
	if got := taskText(t, awaitTask(t, comp, nil, id, "completed")); got != "Hello, Alice" {
		t.Fatalf("result %q", got)
	}
	run, err := rt.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Segment != 0 {
		t.Fatalf("the run parked (segment %d) though answered before it started", run.Segment)
	}

	// A plain call (no tasks extension) of the optional task tool asks nothing
	// before: its durable run parks on the question, as any elicit: does.
	r = taskRPC(t, comp, nil, noCaps, "tools/call", map[string]any{"name": "hello", "arguments": map[string]any{"title": "Dr"}})
	if r.Error != nil || r.Result["resultType"] == "input_required" || r.Result["taskId"] != nil || !strings.Contains(fmt.Sprint(r.Result["content"]), "input_required") {
		t.Fatalf("a plain call: %+v %v", r.Error, r.Result)
	}
}
