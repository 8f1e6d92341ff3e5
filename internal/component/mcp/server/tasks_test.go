package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// MCP Tasks served from the durable store (tasks.go), with raw HTTP requests as
// clients of 2026-07-28 (the tasks extension) and 2025-11-25 (task-augmented
// requests) send them. The store is memRuns: the durable.Runs contract kept in
// memory, running each workflow on the engine.

// memRuns is durable.Runs in memory: Start runs the workflow in a goroutine; a
// step that parks (durable.Park) leaves the run input_required until Resolve
// runs it again with the resolution in its context.
type memRuns struct {
	hc *engine.Context

	mu      sync.Mutex
	runs    map[string]*memRun
	order   []string
	changed chan struct{} // closed and replaced on every change
	// resolved counts the resolutions Resolve accepted.
	resolved int
}

type memRun struct {
	run    durable.Run
	ex     *exchange.Exchange
	cancel context.CancelFunc
}

func newMemRuns(hc *engine.Context) *memRuns {
	return &memRuns{hc: hc, runs: map[string]*memRun{}, changed: make(chan struct{})}
}

func (m *memRuns) Start(_ context.Context, workflow string, ex *exchange.Exchange, o durable.StartOptions) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.runs[o.RunID]; ok {
		return r.run, nil
	}
	now := time.Now()
	r := &memRun{run: durable.Run{ID: o.RunID, Workflow: workflow, Kind: "tool", State: durable.StateWorking,
		Principal: o.Principal, TTL: o.TTL, CreatedAt: now, UpdatedAt: now, Attempts: 1}, ex: ex}
	m.runs[o.RunID] = r
	m.order = append(m.order, o.RunID)
	m.goLocked(r, context.Background())
	return r.run, nil
}

// goLocked runs r's workflow (again) with ctx.
func (m *memRuns) goLocked(r *memRun, ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	ctx = durable.WithDurable(ctx, r.run.ID)
	go func() {
		err := m.hc.Run(ctx, r.run.Workflow, r.ex)
		m.mu.Lock()
		defer m.mu.Unlock()
		if r.run.State.Terminal() {
			return // cancelled meanwhile
		}
		var park *durable.ParkError
		switch {
		case errors.As(err, &park):
			w := park.Wait
			r.run.State, r.run.Wait = durable.StateInputRequired, &w
		case err != nil:
			r.run.State, r.run.Error = durable.StateFailed, exchange.ClientMessage(err)
		default:
			raw, err := exchange.TakeSnapshot(r.ex).Encode(0)
			if err != nil {
				r.run.State, r.run.Error = durable.StateFailed, err.Error()
				break
			}
			r.run.State, r.run.Result = durable.StateCompleted, raw
		}
		m.touchLocked(r)
	}()
}

func (m *memRuns) touchLocked(r *memRun) {
	r.run.UpdatedAt = time.Now()
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memRuns) Await(ctx context.Context, id string) (durable.Run, error) {
	for {
		m.mu.Lock()
		r, ok := m.runs[id]
		changed := m.changed
		var run durable.Run
		if ok {
			run = r.run
		}
		m.mu.Unlock()
		if !ok {
			return durable.Run{}, durable.ErrNotFound
		}
		if s := run.State; s.Terminal() || s == durable.StateInputRequired || s == durable.StateWaiting {
			return run, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return durable.Run{}, ctx.Err()
		}
	}
}

func (m *memRuns) Get(_ context.Context, id string) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return durable.Run{}, durable.ErrNotFound
	}
	return r.run, nil
}

func (m *memRuns) List(_ context.Context, f durable.Filter) ([]durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []durable.Run
	after := f.After == ""
	for _, id := range m.order {
		if !after {
			after = id == f.After
			continue
		}
		if r := m.runs[id].run; r.Principal == f.Principal {
			out = append(out, r)
		}
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

func (m *memRuns) Steps(context.Context, string) ([]durable.StepRecord, error) { return nil, nil }

func (m *memRuns) Cancel(_ context.Context, id string) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return durable.Run{}, durable.ErrNotFound
	}
	if !r.run.State.Terminal() {
		r.cancel()
		r.run.State, r.run.Wait = durable.StateCancelled, nil
		m.touchLocked(r)
	}
	return r.run, nil
}

func (m *memRuns) Resolve(_ context.Context, id string, res durable.Resolution) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return durable.Run{}, durable.ErrNotFound
	}
	if r.run.State != durable.StateInputRequired {
		return r.run, durable.ErrNotWaiting
	}
	m.resolved++
	r.run.State, r.run.Wait, r.run.Segment = durable.StateWorking, nil, r.run.Segment+1
	m.touchLocked(r)
	r.ex.SetException(nil) // the park; the run goes on
	m.goLocked(r, durable.WithResolution(context.Background(), res))
	return r.run, nil
}

func (m *memRuns) Resume(context.Context, string) (durable.Run, error) {
	return durable.Run{}, errors.New("memRuns: resume is not part of these tests")
}

func (m *memRuns) resolutions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resolved
}

// taskWorkflows are the fixture's tools: greet (plain), slow (waits for its
// "ms" argument, or until cancelled), failing (fails), confirm (parks on an
// elicit wait, answers with what the person said) and required (runs only as a
// task).
func taskWorkflows(hc *engine.Context) []*engine.Workflow {
	proc := func(f func(ctx context.Context, ex *exchange.Exchange) error) []engine.Processor {
		return []engine.Processor{engine.ProcessorFunc(f)}
	}
	wf := func(id string, f func(ctx context.Context, ex *exchange.Exchange) error) *engine.Workflow {
		return &engine.Workflow{ID: id, FromURI: "direct://" + id, Processors: proc(f)}
	}
	greet := func(_ context.Context, ex *exchange.Exchange) error {
		args, _ := ex.In().Body().(map[string]any)
		ex.In().SetBody(fmt.Sprintf("Hello, %v!", args["name"]))
		return nil
	}
	return []*engine.Workflow{
		wf("greet", greet),
		wf("required", greet),
		wf("slow", func(ctx context.Context, ex *exchange.Exchange) error {
			args, _ := ex.In().Body().(map[string]any)
			ms, _ := args["ms"].(int64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
			ex.In().SetBody(fmt.Sprintf("slept %dms", ms))
			return nil
		}),
		wf("failing", func(context.Context, *exchange.Exchange) error {
			return errors.New("the job broke")
		}),
		// panics fails in Helix, not in its work (tasks_internal_test.go).
		wf("panics", func(context.Context, *exchange.Exchange) error {
			panic("a nil map")
		}),
		wf("confirm", func(ctx context.Context, ex *exchange.Exchange) error {
			r, ok := durable.ResolutionFrom(ctx)
			if !ok {
				return durable.Park(durable.Wait{Kind: durable.WaitElicit, Key: "confirm", Message: "Delete it?",
					Schema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}}}`)})
			}
			ex.In().SetBody(fmt.Sprintf("%s %s", r.Kind, r.Data))
			return nil
		}),
	}
}

// taskServer starts a stateless server (and a stateful one, "sessions") of the
// fixture's tools over a memRuns store, with two API keys for two principals.
func taskServer(t *testing.T) (*server.Component, *memRuns) {
	t.Helper()
	hc := engine.NewContext("tasks")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	cat := tool.NewCatalogue()
	for _, wf := range taskWorkflows(hc) {
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
		tl, err := tool.FromWorkflow(hc, wf)
		if err != nil {
			t.Fatal(err)
		}
		switch wf.ID {
		case "slow", "failing", "confirm":
			tl.TaskSupport = tool.TaskOptional
		case "required":
			tl.TaskSupport = tool.TaskRequired
		}
		if err := cat.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	runs := newMemRuns(hc)
	durable.Attach(hc, runs)
	t.Cleanup(func() { durable.Attach(hc, nil) })
	stack, err := security.New(security.Config{APIKeys: []string{"key-a", "key-b"}, ServerID: "tasks"})
	if err != nil {
		t.Fatal(err)
	}
	comp := server.New(hc)
	comp.SetCatalogue(cat)
	hc.AddComponent("mcp-server", comp)
	for _, o := range []server.Options{
		{ID: "tasks", Addr: "127.0.0.1:0", Stateless: true, HTTPMiddleware: stack.Middleware, DisableLocalhostProtection: true},
		{ID: "sessions", Addr: "127.0.0.1:0", HTTPMiddleware: stack.Middleware, DisableLocalhostProtection: true},
		{ID: "forbid", Addr: "127.0.0.1:0", Stateless: true, HTTPMiddleware: stack.Middleware, DisableLocalhostProtection: true,
			Tools: map[string]server.ToolOverride{"slow": {Task: "forbidden"}}},
	} {
		if err := comp.AddServer(o); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	return comp, runs
}

var (
	keyA     = map[string]string{"X-API-Key": "key-a"}
	keyB     = map[string]string{"X-API-Key": "key-b"}
	withTask = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	noCaps   = map[string]any{}
)

// taskRPC is one 2026-07-28 request to the stateless server, with its routing
// headers as a client sends them (Mcp-Name: the tool, or the task id).
func taskRPC(t *testing.T, comp *server.Component, headers map[string]string, caps map[string]any, method string, params map[string]any) rpcReply {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps}
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	switch {
	case params["name"] != nil:
		h["Mcp-Name"] = params["name"].(string)
	case params["taskId"] != nil:
		h["Mcp-Name"] = params["taskId"].(string)
	}
	for k, v := range headers {
		h[k] = v
	}
	return postRPC(t, "http://"+comp.Addr("tasks").String()+"/mcp", h, method, params)
}

func postRPC(t *testing.T, url string, headers map[string]string, method string, params map[string]any) rpcReply {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(raw, []byte("data: ")); strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && i >= 0 {
		raw = raw[i+6:]
	}
	var r rpcReply
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v: %s", method, err, raw)
	}
	r.status = resp.StatusCode
	r.contentType = resp.Header.Get("Content-Type")
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		r.session = sid
	}
	return r
}

// createTask calls tool with args as a task and returns its id.
func createTask(t *testing.T, comp *server.Component, key map[string]string, tool string, args map[string]any) string {
	t.Helper()
	r := taskRPC(t, comp, key, withTask, "tools/call", map[string]any{"name": tool, "arguments": args})
	if r.Error != nil || r.Result["resultType"] != "task" {
		t.Fatalf("tools/call %s: %+v %v", tool, r.Error, r.Result)
	}
	id, _ := r.Result["taskId"].(string)
	return id
}

// awaitTask polls tasks/get until the task's status is one of want.
func awaitTask(t *testing.T, comp *server.Component, key map[string]string, id string, want ...string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := taskRPC(t, comp, key, withTask, "tasks/get", map[string]any{"taskId": id})
		if r.Error != nil {
			t.Fatalf("tasks/get %s: %+v", id, r.Error)
		}
		for _, w := range want {
			if r.Result["status"] == w {
				return r.Result
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is still %v, want %v", id, r.Result["status"], want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func taskText(t *testing.T, res map[string]any) string {
	t.Helper()
	inner, _ := res["result"].(map[string]any)
	content, _ := inner["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no result content in %v", res)
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

func TestTasksCreateGetAndInlinedResult(t *testing.T) {
	t.Parallel()
	comp, _ := taskServer(t)
	r := taskRPC(t, comp, keyA, withTask, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"ms": 50}})
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, k := range []string{"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} {
		if _, ok := r.Result[k]; !ok {
			t.Errorf("CreateTaskResult lacks %s: %v", k, r.Result)
		}
	}
	for _, k := range []string{"task", "ttl", "pollInterval", "result", "error", "inputRequests", "requestState", "content"} {
		if _, ok := r.Result[k]; ok {
			t.Errorf("CreateTaskResult carries %s: %v", k, r.Result)
		}
	}
	if r.Result["resultType"] != "task" || r.Result["status"] != "working" {
		t.Fatalf("CreateTaskResult %v", r.Result)
	}
	if ttl, _ := r.Result["ttlMs"].(float64); ttl <= 0 || ttl != float64(int64(ttl)) {
		t.Errorf("ttlMs %v is no positive integer", r.Result["ttlMs"])
	}
	id := r.Result["taskId"].(string)
	// The task exists as soon as the answer is out.
	if g := taskRPC(t, comp, keyA, withTask, "tasks/get", map[string]any{"taskId": id}); g.Error != nil || g.Result["taskId"] != id {
		t.Fatalf("immediate tasks/get: %+v %v", g.Error, g.Result)
	}
	done := awaitTask(t, comp, keyA, id, "completed")
	if got := taskText(t, done); got != "slept 50ms" {
		t.Fatalf("inlined result %q", got)
	}
	if done["resultType"] != "complete" {
		t.Errorf("tasks/get resultType %v", done["resultType"])
	}
	inner := done["result"].(map[string]any)
	if _, ok := inner["resultType"]; ok {
		t.Errorf("the inlined result carries a resultType of its own: %v", inner)
	}
}

func TestTasksNeedTheExtension(t *testing.T) {
	t.Parallel()
	comp, runs := taskServer(t)
	// A client without the extension gets the plain result of an optional task tool…
	r := taskRPC(t, comp, keyA, noCaps, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"ms": 0}})
	if r.Error != nil || r.Result["resultType"] != "complete" || r.Result["taskId"] != nil || resultText(r) != "slept 0ms" {
		t.Fatalf("plain call of a task tool: %+v %v", r.Error, r.Result)
	}
	// …is refused a required one, with the capability it lacks…
	r = taskRPC(t, comp, keyA, noCaps, "tools/call", map[string]any{"name": "required", "arguments": map[string]any{"name": "x"}})
	if r.Error == nil || r.Error.Code != -32021 || r.status != http.StatusBadRequest ||
		!strings.Contains(string(r.Error.Data), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Fatalf("required task tool without the extension: %d %+v", r.status, r.Error)
	}
	// …and may not use the tasks methods.
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		r = taskRPC(t, comp, keyA, noCaps, m, map[string]any{"taskId": "task-x", "inputResponses": map[string]any{}})
		if r.Error == nil || r.Error.Code != -32021 {
			t.Errorf("%s without the extension: %+v", m, r.Error)
		}
	}
	// With it, a required tool makes a task; a plain tool stays plain.
	id := createTask(t, comp, keyA, "required", map[string]any{"name": "Ada"})
	if got := taskText(t, awaitTask(t, comp, keyA, id, "completed")); got != "Hello, Ada!" {
		t.Fatalf("required task result %q", got)
	}
	r = taskRPC(t, comp, keyA, withTask, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "Bo"},
		"task": map[string]any{"ttl": 60000}})
	if r.Error != nil || r.Result["taskId"] != nil || resultText(r) != "Hello, Bo!" {
		t.Fatalf("plain tool with a legacy task param: %+v %v", r.Error, r.Result)
	}
	if n := len(runs.order); n != 1 {
		t.Fatalf("%d runs started, want 1", n)
	}
}

func TestTasksMethodsOfTheExtension(t *testing.T) {
	t.Parallel()
	comp, _ := taskServer(t)
	for _, m := range []string{"tasks/list", "tasks/result"} {
		r := taskRPC(t, comp, keyA, withTask, m, map[string]any{"taskId": "task-x"})
		if r.Error == nil || r.Error.Code != -32601 || r.status != http.StatusNotFound {
			t.Errorf("%s on 2026-07-28: %d %+v", m, r.status, r.Error)
		}
	}
	for _, id := range []string{"task-nonexistent", "nonexistent", ""} {
		r := taskRPC(t, comp, keyA, withTask, "tasks/get", map[string]any{"taskId": id})
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("tasks/get %q: %+v", id, r.Error)
		}
	}
	r := taskRPC(t, comp, keyA, withTask, "tasks/get", nil)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("tasks/get without taskId: %+v", r.Error)
	}
	// The routing header must name the task the body names.
	id := createTask(t, comp, keyA, "slow", map[string]any{"ms": 0})
	r = taskRPC(t, comp, map[string]string{"X-API-Key": "key-a", "Mcp-Name": "task-other"}, withTask, "tasks/get", map[string]any{"taskId": id})
	if r.Error == nil || r.Error.Code != -32020 {
		t.Errorf("tasks/get with a mismatched Mcp-Name: %+v", r.Error)
	}
}

func TestTasksBelongToTheirPrincipal(t *testing.T) {
	t.Parallel()
	comp, runs := taskServer(t)
	id := createTask(t, comp, keyA, "slow", map[string]any{"ms": 60000})
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		r := taskRPC(t, comp, keyB, withTask, m, map[string]any{"taskId": id, "inputResponses": map[string]any{}})
		if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "unknown task") {
			t.Errorf("%s by another principal: %+v", m, r.Error)
		}
	}
	if run, _ := runs.Get(context.Background(), id); run.State != durable.StateWorking || run.Principal == "" {
		t.Fatalf("the run after another principal's cancel: %+v", run)
	}
	awaitTask(t, comp, keyA, id, "working")
	if r := taskRPC(t, comp, keyA, withTask, "tasks/cancel", map[string]any{"taskId": id}); r.Error != nil {
		t.Fatal(r.Error)
	}
}

func TestTasksCancel(t *testing.T) {
	t.Parallel()
	comp, _ := taskServer(t)
	id := createTask(t, comp, keyA, "slow", map[string]any{"ms": 60000})
	for range 2 { // the second cancel, of an ended task, answers the same
		r := taskRPC(t, comp, keyA, withTask, "tasks/cancel", map[string]any{"taskId": id})
		if r.Error != nil || len(r.Result) != 1 || r.Result["resultType"] != "complete" {
			t.Fatalf("tasks/cancel: %+v %v", r.Error, r.Result)
		}
	}
	got := awaitTask(t, comp, keyA, id, "cancelled", "completed", "failed")
	if got["status"] != "cancelled" || got["result"] != nil {
		t.Fatalf("after cancel: %v", got)
	}
}

func TestTasksToolErrorIsCompletedWithIsError(t *testing.T) {
	t.Parallel()
	comp, _ := taskServer(t)
	id := createTask(t, comp, keyA, "failing", nil)
	got := awaitTask(t, comp, keyA, id, "completed", "failed")
	inner, _ := got["result"].(map[string]any)
	if got["status"] != "completed" || inner["isError"] != true || !strings.Contains(taskText(t, got), "the job broke") {
		t.Fatalf("failed tool as a task: %v", got)
	}
	// Bad arguments are answered at once, as a plain call's.
	r := taskRPC(t, comp, keyA, withTask, "tools/call", map[string]any{"name": "slow", "arguments": []any{1}})
	if r.Error != nil || r.Result["isError"] != true || r.Result["taskId"] != nil {
		t.Fatalf("bad arguments: %+v %v", r.Error, r.Result)
	}
}

func TestTasksInputRequiredAndUpdate(t *testing.T) {
	t.Parallel()
	comp, runs := taskServer(t)
	id := createTask(t, comp, keyA, "confirm", nil)
	got := awaitTask(t, comp, keyA, id, "input_required")
	reqs, _ := got["inputRequests"].(map[string]any)
	ask, _ := reqs["confirm"].(map[string]any)
	params, _ := ask["params"].(map[string]any)
	if ask["method"] != "elicitation/create" || params["message"] != "Delete it?" || params["requestedSchema"] == nil {
		t.Fatalf("inputRequests %v", got["inputRequests"])
	}
	// An answer to another request is acknowledged and changes nothing.
	ack := taskRPC(t, comp, keyA, withTask, "tasks/update", map[string]any{"taskId": id,
		"inputResponses": map[string]any{"unknown-key": map[string]any{"ignored": true}}})
	if ack.Error != nil || len(ack.Result) != 1 || ack.Result["resultType"] != "complete" {
		t.Fatalf("tasks/update ack: %+v %v", ack.Error, ack.Result)
	}
	awaitTask(t, comp, keyA, id, "input_required")
	// Bad input responses are refused.
	bad := taskRPC(t, comp, keyA, withTask, "tasks/update", map[string]any{"taskId": id, "inputResponses": []any{}})
	if bad.Error == nil || bad.Error.Code != -32602 {
		t.Fatalf("tasks/update with a list: %+v", bad.Error)
	}
	// An answer that does not fit the form is refused; the task still waits.
	wrong := map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": "yes please"}}}
	bad = taskRPC(t, comp, keyA, withTask, "tasks/update", map[string]any{"taskId": id, "inputResponses": wrong})
	if bad.Error == nil || bad.Error.Code != -32602 || !strings.Contains(bad.Error.Message, "does not match the form") {
		t.Fatalf("tasks/update with an answer off the form: %+v", bad.Error)
	}
	awaitTask(t, comp, keyA, id, "input_required")
	answer := map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}
	for range 2 { // the second answer comes too late and changes nothing
		ack = taskRPC(t, comp, keyA, withTask, "tasks/update", map[string]any{"taskId": id, "inputResponses": answer})
		if ack.Error != nil || ack.Result["resultType"] != "complete" {
			t.Fatalf("tasks/update: %+v %v", ack.Error, ack.Result)
		}
	}
	if got := taskText(t, awaitTask(t, comp, keyA, id, "completed")); got != `answered {"confirm":true}` {
		t.Fatalf("result after the answer: %q", got)
	}
	if n := runs.resolutions(); n != 1 {
		t.Fatalf("%d resolutions, want 1", n)
	}
}

// A 2025-11-25 session asks for a task with the task param, and has tasks/get,
// tasks/result, tasks/list and tasks/cancel.
func TestTasksAugmentedRequests2025(t *testing.T) {
	t.Parallel()
	comp, _ := taskServer(t)
	url := "http://" + comp.Addr("sessions").String() + "/mcp"
	init := postRPC(t, url, keyA, "initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if init.Error != nil || init.session == "" {
		t.Fatalf("initialize: %+v", init.Error)
	}
	h := map[string]string{"X-API-Key": "key-a", "Mcp-Session-Id": init.session, "MCP-Protocol-Version": "2025-11-25"}
	r := postRPC(t, url, h, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"ms": 20}, "task": map[string]any{"ttl": 60000}})
	task, _ := r.Result["task"].(map[string]any)
	if r.Error != nil || task["taskId"] == nil || task["status"] != "working" || task["ttl"] != float64(60000) {
		t.Fatalf("task-augmented tools/call: %+v %v", r.Error, r.Result)
	}
	id := task["taskId"].(string)
	res := postRPC(t, url, h, "tasks/result", map[string]any{"taskId": id})
	if res.Error != nil || resultText(res) != "slept 20ms" {
		t.Fatalf("tasks/result: %+v %v", res.Error, res.Result)
	}
	get := postRPC(t, url, h, "tasks/get", map[string]any{"taskId": id})
	if get.Error != nil || get.Result["status"] != "completed" || get.Result["result"] != nil {
		t.Fatalf("tasks/get: %+v %v", get.Error, get.Result)
	}
	list := postRPC(t, url, h, "tasks/list", nil)
	tasks, _ := list.Result["tasks"].([]any)
	if list.Error != nil || len(tasks) != 1 || tasks[0].(map[string]any)["taskId"] != id {
		t.Fatalf("tasks/list: %+v %v", list.Error, list.Result)
	}
	if c := postRPC(t, url, h, "tasks/cancel", map[string]any{"taskId": id}); c.Error == nil || c.Error.Code != -32602 {
		t.Fatalf("tasks/cancel of an ended task: %+v", c.Error)
	}
	// Without the task param, the call is answered as always.
	plain := postRPC(t, url, h, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"ms": 0}})
	if plain.Error != nil || resultText(plain) != "slept 0ms" {
		t.Fatalf("plain call: %+v %v", plain.Error, plain.Result)
	}
}

// Without a durable store, a server has no tasks: no extension, no methods.
func TestNoTasksWithoutAStore(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("plain")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	srv, err := server.NewSDKServer(hc, server.Options{ID: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, ok := cs.InitializeResult().Capabilities.Extensions["io.modelcontextprotocol/tasks"]; ok {
		t.Fatal("a server without a durable store advertises tasks")
	}
}

// A tool override's task: forbidden serves a durable tool without tasks; asking
// for a task of a tool whose workflow is not durable is an error naming it.
func TestToolOverrideTask(t *testing.T) {
	t.Parallel()
	comp, runs := taskServer(t)
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "slow", "X-API-Key": "key-a"}
	r := postRPC(t, "http://"+comp.Addr("forbid").String()+"/mcp", h, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"ms": 1},
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": withTask}})
	if r.Error != nil || r.Result["taskId"] != nil || resultText(r) != "slept 1ms" {
		t.Fatalf("task: forbidden: %+v %v", r.Error, r.Result)
	}
	if n := len(runs.order); n != 0 {
		t.Fatalf("%d runs started", n)
	}
	hc := engine.NewContext("plain")
	for _, wf := range taskWorkflows(hc) {
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	_, err := server.NewSDKServer(hc, server.Options{ID: "x", Tools: map[string]server.ToolOverride{"greet": {Task: tool.TaskRequired}}})
	if err == nil || !strings.Contains(err.Error(), "tool greet: task: required needs a durable workflow: set durable: true on workflow greet") {
		t.Fatalf("task: required of a workflow that is not durable: %v", err)
	}
}

// A client that accepts only event streams gets the tasks answers as one event.
func TestTasksAnswerAsAnEventStream(t *testing.T) {
	t.Parallel()
	comp, _ := taskServer(t)
	id := createTask(t, comp, keyA, "slow", map[string]any{"ms": 0})
	r := taskRPC(t, comp, map[string]string{"X-API-Key": "key-a", "Accept": "text/event-stream"}, withTask, "tasks/get", map[string]any{"taskId": id})
	if r.Error != nil || r.Result["taskId"] != id {
		t.Fatalf("tasks/get as an event stream: %+v %v", r.Error, r.Result)
	}
	if r.contentType != "text/event-stream" {
		t.Fatalf("Content-Type %q", r.contentType)
	}
}
