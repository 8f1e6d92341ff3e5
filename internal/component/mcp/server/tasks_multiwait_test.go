package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// asks is a branch that asks the question key (a form with one field, key,
// of type typ) and answers with the field's value.
func asks(key, typ string) engine.Processor {
	return engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
		r, ok := durable.ResolutionFor(ctx, key)
		if !ok {
			return durable.Park(durable.Wait{Kind: durable.WaitElicit, Key: key, Message: key + "?",
				Schema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":%q}},"required":[%q]}`, key, typ, key))})
		}
		var content map[string]any
		_ = json.Unmarshal(r.Data, &content)
		ex.In().SetBody(content[key])
		return nil
	})
}

// A task whose run asks two questions at once shows both; an update answering
// one leaves the other; an update whose second answer does not fit its form
// records neither; answering the last completes the task with both answers.
func TestTaskWithTwoQuestionsAtOnce(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("tasks")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	m := pattern.NewMulticast(hc, pattern.MulticastOptions{Parallel: true}, []engine.Processor{asks("name", "string"), asks("confirm", "boolean")})
	wf := &engine.Workflow{ID: "two", FromURI: "direct://two", Durable: true, Processors: []engine.Processor{m,
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody(fmt.Sprint(ex.In().Body()))
			return nil
		})}}
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
	update := func(id string, responses map[string]any) rpcReply {
		return taskRPC(t, comp, nil, withTask, "tasks/update", map[string]any{"taskId": id, "inputResponses": responses})
	}
	accept := func(content map[string]any) map[string]any {
		return map[string]any{"action": "accept", "content": content}
	}

	id := createTask(t, comp, nil, "two", nil)
	got := awaitTask(t, comp, nil, id, "input_required")
	if reqs, _ := got["inputRequests"].(map[string]any); len(reqs) != 2 || reqs["name"] == nil || reqs["confirm"] == nil {
		t.Fatalf("inputRequests %v", got["inputRequests"])
	}
	// One answer fits, the other does not: the update is refused whole.
	r := update(id, map[string]any{"name": accept(map[string]any{"name": "Ada"}), "confirm": accept(map[string]any{"confirm": "yes"})})
	if r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("an update with an answer off its form: %+v", r.Error)
	}
	got = awaitTask(t, comp, nil, id, "input_required")
	if reqs, _ := got["inputRequests"].(map[string]any); len(reqs) != 2 {
		t.Fatalf("after a refused update: %v", got["inputRequests"])
	}
	if r = update(id, map[string]any{"name": accept(map[string]any{"name": "Ada"})}); r.Error != nil {
		t.Fatal(r.Error)
	}
	got = awaitTask(t, comp, nil, id, "input_required")
	if reqs, _ := got["inputRequests"].(map[string]any); len(reqs) != 1 || reqs["confirm"] == nil {
		t.Fatalf("after one answer: %v", got["inputRequests"])
	}
	// A second answer to the answered question changes nothing.
	if r = update(id, map[string]any{"name": accept(map[string]any{"name": "Bob"})}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r = update(id, map[string]any{"confirm": accept(map[string]any{"confirm": true})}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := taskText(t, awaitTask(t, comp, nil, id, "completed")); got != "[Ada true]" {
		t.Fatalf("result %q", got)
	}
}
