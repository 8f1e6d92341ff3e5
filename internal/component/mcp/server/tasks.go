package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/form"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// MCP Tasks served from the durable store.
//
// A tool whose workflow is durable may run as a task: the call starts a durable
// run (Runs.Start, the run id is the task id) and answers at once with the task;
// the client follows it with tasks/get, answers the questions of a run parked on
// elicit:/approve: with tasks/update, and stops it with tasks/cancel. Everything
// is read from the store, so any replica sharing it answers, after a restart too.
//
// Two revisions of the surface are served, each only to the clients of its
// protocol:
//   - 2026-07-28, the io.modelcontextprotocol/tasks extension: a request whose
//     _meta client capabilities declare the extension gets a task from tools/call
//     (CreateTaskResult, resultType "task"), and may use tasks/get, tasks/update
//     and tasks/cancel; tasks/list and tasks/result are not part of it (-32601).
//   - 2025-11-25 task-augmented requests: a tools/call carrying a task param gets
//     a task ({"task": …}); tasks/get, tasks/result, tasks/list and tasks/cancel
//     serve it on the session.
//
// A task is visible only to the principal that created it, and only through the
// tools of the server that created it: to anyone else its id is unknown (-32602).

// tasksExtension is the name of the tasks extension of MCP 2026-07-28.
const tasksExtension = "io.modelcontextprotocol/tasks"

const (
	// taskTTL is how long an ended task stays readable, unless a 2025-11-25
	// client asks for another ttl.
	taskTTL = 24 * time.Hour
	// taskPollInterval is the poll interval the server suggests.
	taskPollInterval = time.Second
	// taskIDPrefix starts the run id of every task a server creates.
	taskIDPrefix = "task-"
	// taskRecordWait bounds the wait for a started run to be in the store.
	taskRecordWait = 10 * time.Second
	// taskResultWait bounds one 2025-11-25 tasks/result wait for a run to end;
	// the client asks again after it.
	taskResultWait = 5 * time.Minute
)

// taskServer answers the tasks surface of one MCP server (transport.Tasks).
type taskServer struct {
	runs durable.Runs
	// tools returns the server's task tools by name (they change on reload).
	tools func() map[string]*serverTool
	// decode turns the snapshot a run ended with into its exchange.
	decode func(json.RawMessage) (*exchange.Exchange, error)
	caller *tool.Caller
	logger *slog.Logger
	// workflow looks a workflow up by id, for the questions its task tool
	// asks before the task (tasks_before.go); nil: none are asked.
	workflow func(id string) (*engine.Workflow, bool)
}

var _ transport.Tasks = (*taskServer)(nil)

// TaskTool reports whether the tool named name runs as a task.
func (ts *taskServer) TaskTool(name string) bool {
	return ts.tool(name) != nil
}

// tool returns the task tool named name, or nil.
func (ts *taskServer) tool(name string) *serverTool {
	return ts.tools()[name]
}

// taskParams are the members of the params of the tasks surface's requests.
type taskParams struct {
	Meta map[string]json.RawMessage `json:"_meta"`
	// tools/call
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Task is the task param of a 2025-11-25 task-augmented request.
	Task *struct {
		TTL *int64 `json:"ttl"`
	} `json:"task"`
	// tasks/*
	TaskID         *string         `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses"`
	Cursor         string          `json:"cursor"`
}

// Serve answers one request of the tasks surface.
func (ts *taskServer) Serve(ctx context.Context, req *transport.TaskRequest) (any, *jsonrpc.Error, bool) {
	var p taskParams
	if len(req.Call.Params) > 0 {
		if err := json.Unmarshal(req.Call.Params, &p); err != nil {
			if req.Call.Method == "tools/call" {
				return nil, nil, false // the session answers it as it answers any bad call
			}
			return nil, invalidParams(fmt.Sprintf("params of %s: %v", req.Call.Method, err)), true
		}
	}
	who := taskPrincipal(req.HTTP)
	if req.Version >= protocolStateless {
		return ts.serveExtension(ctx, req, &p, who)
	}
	return ts.serveAugmented(ctx, req, &p, who)
}

// protocolStateless is the first revision with the tasks extension.
const protocolStateless = "2026-07-28"

// serveExtension serves the 2026-07-28 tasks extension.
func (ts *taskServer) serveExtension(ctx context.Context, req *transport.TaskRequest, p *taskParams, who string) (any, *jsonrpc.Error, bool) {
	declared := declaresTasks(p.Meta)
	switch req.Call.Method {
	case "tools/call":
		t := ts.tool(p.Name)
		if t == nil {
			return nil, nil, false
		}
		if !declared {
			if t.t.TaskSupport == tool.TaskRequired {
				return nil, missingTasksExtension(fmt.Sprintf("tool %s runs only as a task", p.Name)), true
			}
			return nil, nil, false // a plain call, answered by the session
		}
		return ts.start(ctx, t, p, who, taskTTL, false)
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !declared {
			return nil, missingTasksExtension(req.Call.Method + " is part of the tasks extension"), true
		}
	default:
		// tasks/list and tasks/result belong to 2025-11-25's tasks only: the
		// extension inlines the result in tasks/get and lists nothing.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not part of the tasks extension of protocol %s (tasks/get carries the result)", req.Call.Method, req.Version)}, true
	}
	run, e := ts.owned(ctx, p, who)
	if e != nil {
		return nil, e, true
	}
	switch req.Call.Method {
	case "tasks/get":
		return ts.detailed(run), nil, true
	case "tasks/cancel":
		if _, err := ts.runs.Cancel(ctx, run.ID); err != nil && !errors.Is(err, durable.ErrNotFound) {
			return nil, ts.storeError(req.Call.Method, run.ID, err), true
		}
		return completeAck{ResultType: "complete"}, nil, true
	default: // tasks/update
		if e := ts.update(ctx, run, p.InputResponses); e != nil {
			return nil, e, true
		}
		return completeAck{ResultType: "complete"}, nil, true
	}
}

// serveAugmented serves the tasks of protocol 2025-11-25 (task-augmented requests).
func (ts *taskServer) serveAugmented(ctx context.Context, req *transport.TaskRequest, p *taskParams, who string) (any, *jsonrpc.Error, bool) {
	switch req.Call.Method {
	case "tools/call":
		t := ts.tool(p.Name)
		if t == nil {
			return nil, nil, false
		}
		if p.Task == nil {
			if t.t.TaskSupport == tool.TaskRequired {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
					Message: fmt.Sprintf("tool %s runs only as a task: call it with the task param", p.Name)}, true
			}
			return nil, nil, false
		}
		ttl := taskTTL
		if p.Task.TTL != nil && *p.Task.TTL > 0 {
			ttl = time.Duration(*p.Task.TTL) * time.Millisecond
		}
		return ts.start(ctx, t, p, who, ttl, true)
	case "tasks/list":
		return ts.list(ctx, p.Cursor, who)
	case "tasks/get", "tasks/result", "tasks/cancel":
	default:
		return nil, nil, false // the session answers it (method not found)
	}
	run, e := ts.owned(ctx, p, who)
	if e != nil {
		return nil, e, true
	}
	switch req.Call.Method {
	case "tasks/get":
		return legacyTaskOf(run), nil, true
	case "tasks/cancel":
		if run.State.Terminal() {
			return nil, invalidParams(fmt.Sprintf("task %s has ended (%s): it cannot be cancelled", run.ID, run.State)), true
		}
		run, err := ts.runs.Cancel(ctx, run.ID)
		if err != nil {
			return nil, ts.storeError(req.Call.Method, p.taskID(), err), true
		}
		return legacyTaskOf(run), nil, true
	default: // tasks/result: waits for the end, then answers what the call would have
		if !run.State.Terminal() {
			wctx, cancel := context.WithTimeout(ctx, taskResultWait)
			defer cancel()
			for !run.State.Terminal() {
				var err error
				if run, err = ts.runs.Await(wctx, run.ID); err != nil {
					return nil, ts.storeError(req.Call.Method, p.taskID(), err), true
				}
				if run.State == durable.StateInputRequired || run.State == durable.StateWaiting {
					return nil, invalidParams(fmt.Sprintf("task %s waits (%s): its result is not there yet; ask tasks/get", run.ID, run.State)), true
				}
			}
		}
		res, e := ts.result(run)
		if e != nil {
			return nil, e, true
		}
		return res, nil, true
	}
}

// start starts t's durable run for the call and answers with its task.
func (ts *taskServer) start(ctx context.Context, t *serverTool, p *taskParams, who string, ttl time.Duration, legacy bool) (any, *jsonrpc.Error, bool) {
	task, refused := t.t.StartTask(tool.WithCaller(ctx, ts.caller), p.Arguments)
	if refused != nil {
		return completeResult(sdkResult(*refused), !legacy), nil, true
	}
	var answers map[string]durable.Resolution
	if !legacy {
		var asked any
		var e *jsonrpc.Error
		if answers, asked, e = ts.beforeTask(task, p); e != nil {
			return nil, e, true
		} else if asked != nil {
			return asked, nil, true
		}
	}
	id, err := newTaskID()
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot make a task id: " + err.Error()}, true
	}
	// The run outlives the request that starts it.
	run, err := ts.runs.Start(context.WithoutCancel(ctx), task.Workflow, task.Exchange,
		durable.StartOptions{RunID: id, Principal: who, TTL: ttl, Answers: answers})
	if err != nil {
		ts.logger.Error("mcp task: cannot start the durable run", "tool", t.info.Name, "workflow", task.Workflow, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("cannot start tool %s as a task; try again later", t.info.Name)}, true
	}
	if run, err = ts.recorded(ctx, run); err != nil {
		ts.logger.Error("mcp task: the durable run is not recorded", "tool", t.info.Name, "task", id, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("cannot start tool %s as a task; try again later", t.info.Name)}, true
	}
	if legacy {
		return legacyCreateResult{Task: legacyTaskOf(run)}, nil, true
	}
	return createTaskResult{ResultType: "task", taskFields: taskFieldsOf(run)}, nil, true
}

// recorded waits until the store answers for the run Start began: a task is
// answered only once tasks/get finds it, on this replica or any other.
func (ts *taskServer) recorded(ctx context.Context, started durable.Run) (durable.Run, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskRecordWait)
	defer cancel()
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		run, err := ts.runs.Get(ctx, started.ID)
		if !errors.Is(err, durable.ErrNotFound) {
			return run, err
		}
		select {
		case <-ctx.Done():
			return started, fmt.Errorf("run %s is not in the store after %s", started.ID, taskRecordWait)
		case <-time.After(wait):
		}
	}
}

// owned returns the task p names if the caller may see it: a run this server's
// task tools started for the same principal. Any other id is unknown (-32602),
// so that nobody learns of others' tasks.
func (ts *taskServer) owned(ctx context.Context, p *taskParams, who string) (durable.Run, *jsonrpc.Error) {
	if p.TaskID == nil {
		return durable.Run{}, invalidParams("params need a string \"taskId\"")
	}
	id := *p.TaskID
	unknown := invalidParams(fmt.Sprintf("unknown task %q", id))
	if !strings.HasPrefix(id, taskIDPrefix) {
		return durable.Run{}, unknown
	}
	run, err := ts.runs.Get(ctx, id)
	if errors.Is(err, durable.ErrNotFound) {
		return durable.Run{}, unknown
	}
	if err != nil {
		return durable.Run{}, ts.storeError("tasks", id, err)
	}
	if run.Principal != who || !ts.ownsWorkflow(run.Workflow) {
		return durable.Run{}, unknown
	}
	return run, nil
}

// ownsWorkflow reports whether a task tool of this server runs workflow.
func (ts *taskServer) ownsWorkflow(workflow string) bool {
	return ts.toolOf(workflow) != nil
}

// toolOf returns the task tool running workflow, or nil.
func (ts *taskServer) toolOf(workflow string) *serverTool {
	for _, t := range ts.tools() {
		if t.t.Workflow() == workflow {
			return t
		}
	}
	return nil
}

// list answers 2025-11-25 tasks/list: the caller's tasks, a page at a time.
func (ts *taskServer) list(ctx context.Context, cursor, who string) (any, *jsonrpc.Error, bool) {
	const page = 50
	runs, err := ts.runs.List(ctx, durable.Filter{Principal: who, Limit: page, After: cursor})
	if err != nil {
		return nil, ts.storeError("tasks/list", "", err), true
	}
	out := legacyTaskList{Tasks: []legacyTask{}}
	for _, r := range runs {
		if strings.HasPrefix(r.ID, taskIDPrefix) && ts.ownsWorkflow(r.Workflow) {
			out.Tasks = append(out.Tasks, legacyTaskOf(r))
		}
	}
	if len(runs) == page {
		out.NextCursor = runs[len(runs)-1].ID
	}
	return out, nil, true
}

// update delivers the input responses of tasks/update to the run's wait: the
// response to the request the run waits on resolves it (the first resolution
// wins); responses to anything else are ignored, as the extension asks.
func (ts *taskServer) update(ctx context.Context, run durable.Run, raw json.RawMessage) *jsonrpc.Error {
	var responses map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &responses) != nil {
		return invalidParams("tasks/update needs \"inputResponses\": an object of responses keyed by the ids of the task's inputRequests")
	}
	if run.State != durable.StateInputRequired || run.Wait == nil {
		return nil
	}
	// A run may wait for several answers at once (parallel branches): each
	// response resolves its own wait, named by its key; the run goes on once
	// all are answered. Every response is checked before any is recorded.
	var answers []durable.Resolution
	for _, w := range runWaits(run) {
		resp, ok := responses[inputRequestID(w)]
		if !ok {
			continue
		}
		r, e := resolutionOf(w, resp)
		if e != nil {
			return e
		}
		r.Key = w.Key
		answers = append(answers, r)
	}
	for _, r := range answers {
		if _, err := ts.runs.Resolve(ctx, run.ID, r); err != nil && !errors.Is(err, durable.ErrNotWaiting) {
			return ts.storeError("tasks/update", run.ID, err)
		}
	}
	return nil
}

// runWaits are the waits of a parked run not answered yet: several when its
// parallel branches each wait, else its one wait.
func runWaits(run durable.Run) []durable.Wait {
	if len(run.Waits) > 0 {
		return run.Waits
	}
	if run.Wait != nil {
		return []durable.Wait{*run.Wait}
	}
	return nil
}

// resolutionOf reads the client's answer to the elicitation of wait w.
func resolutionOf(w durable.Wait, raw json.RawMessage) (durable.Resolution, *jsonrpc.Error) {
	var er struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &er); err != nil || er.Action == "" {
		return durable.Resolution{}, invalidParams(fmt.Sprintf("the response to input request %q must be an elicitation result {\"action\": \"accept\"|\"decline\"|\"cancel\", \"content\": …}", inputRequestID(w)))
	}
	accepted := er.Action == "accept"
	if w.Kind == durable.WaitApprove {
		var c struct {
			Approved bool `json:"approved"`
		}
		_ = json.Unmarshal(er.Content, &c)
		if accepted && c.Approved {
			return durable.Resolution{Kind: durable.ResolvedApproved, By: "mcp"}, nil
		}
		return durable.Resolution{Kind: durable.ResolvedRejected, By: "mcp"}, nil
	}
	if !accepted {
		return durable.Resolution{Kind: durable.ResolvedDeclined, By: "mcp"}, nil
	}
	// An answer that does not fit the form is refused here, leaving the run
	// waiting, rather than resolving the wait and failing the run.
	var content map[string]any
	if len(er.Content) > 0 && string(er.Content) != "null" {
		if err := json.Unmarshal(er.Content, &content); err != nil {
			return durable.Resolution{}, invalidParams(fmt.Sprintf("the answer to input request %q must be an object with the form's fields", inputRequestID(w)))
		}
	}
	if content == nil {
		content = map[string]any{}
	}
	var schema map[string]any
	if len(w.Schema) > 0 && json.Unmarshal(w.Schema, &schema) == nil {
		if err := form.Check(schema, &content); err != nil {
			return durable.Resolution{}, invalidParams(fmt.Sprintf("the answer to input request %q does not match the form: %v", inputRequestID(w), err))
		}
	}
	return durable.Resolution{Kind: durable.ResolvedAnswered, Data: er.Content, By: "mcp"}, nil
}

// approveSchema is the form an approve: wait asks with.
var approveSchema = json.RawMessage(`{"type":"object","properties":{"approved":{"type":"boolean","title":"Approve"}},"required":["approved"]}`)

// inputRequestID is the id of the input request of wait w.
func inputRequestID(w durable.Wait) string {
	if w.Key != "" {
		return w.Key
	}
	return w.Kind
}

// waitInputRequests are the requests of a run parked on questions for a
// person: one per question not answered yet.
func waitInputRequests(run durable.Run) map[string]any {
	var out map[string]any
	for _, w := range runWaits(run) {
		if w.Kind != durable.WaitElicit && w.Kind != durable.WaitApprove {
			continue
		}
		schema := w.Schema
		if w.Kind == durable.WaitApprove || len(schema) == 0 {
			schema = approveSchema
		}
		if out == nil {
			out = map[string]any{}
		}
		out[inputRequestID(w)] = map[string]any{
			"method": "elicitation/create",
			"params": map[string]any{"mode": "form", "message": w.Message, "requestedSchema": schema},
		}
	}
	return out
}

// detailed is the 2026-07-28 tasks/get answer (DetailedTask).
func (ts *taskServer) detailed(run durable.Run) detailedTask {
	d := detailedTask{ResultType: "complete", taskFields: taskFieldsOf(run)}
	switch d.Status {
	case "input_required":
		d.InputRequests = waitInputRequests(run)
	case "completed", "failed":
		res, e := ts.result(run)
		if e != nil {
			d.Status, d.Error = "failed", e
			break
		}
		d.Status, d.Result = "completed", res
	}
	return d
}

// result is the tool result of an ended run: what the call would have answered.
// A run whose step failed is a tool error (isError), as the same failure of a
// plain call; a run that failed in Helix itself (durable.Run.Internal: its
// checkpoint could not be kept, a step panicked, its workflow changed) gave no
// answer of the tool, and is a JSON-RPC internal error, as is a run whose end
// cannot be read (its tool is gone, its snapshot unreadable).
func (ts *taskServer) result(run durable.Run) (json.RawMessage, *jsonrpc.Error) {
	switch run.State {
	case durable.StateCancelled:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s was cancelled", run.ID)}
	case durable.StateFailed:
		msg := run.Error
		if run.Internal {
			if msg == "" {
				msg = "internal error"
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s failed in the server: %s", run.ID, msg)}
		}
		if msg == "" {
			msg = "the tool failed"
		}
		return completeResult(sdkResult(tool.ErrorResult(msg)), false), nil
	}
	t := ts.toolOf(run.Workflow)
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s ran workflow %s, which this server no longer serves as a task", run.ID, run.Workflow)}
	}
	ex, err := ts.decode(run.Result)
	if err != nil {
		ts.logger.Error("mcp task: cannot read the end of the run", "task", run.ID, "workflow", run.Workflow, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the result of task %s cannot be read", run.ID)}
	}
	return completeResult(sdkResult(t.t.TaskResult(ex)), false), nil
}

// storeError is the JSON-RPC error of a store that failed; the cause goes to the log.
func (ts *taskServer) storeError(method, id string, err error) *jsonrpc.Error {
	if errors.Is(err, durable.ErrNotFound) {
		return invalidParams(fmt.Sprintf("unknown task %q", id))
	}
	ts.logger.Error("mcp task: the durable store failed", "method", method, "task", id, "error", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: method + ": the task store is not available; try again later"}
}

func (p *taskParams) taskID() string {
	if p.TaskID == nil {
		return ""
	}
	return *p.TaskID
}

// declaresTasks reports whether a request's _meta client capabilities declare
// the tasks extension.
func declaresTasks(meta map[string]json.RawMessage) bool {
	raw, ok := meta[sdk.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[tasksExtension]
	return ok
}

// missingTasksExtension is the -32021 error of a request that needs the tasks
// extension its client did not declare.
func missingTasksExtension(why string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
		"extensions": map[string]any{tasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: sdk.CodeMissingRequiredClientCapabilities,
		Message: why + ": declare the " + tasksExtension + " extension in the request's client capabilities", Data: data}
}

// taskPrincipal is the authenticated caller of the POST r ("" when none).
func taskPrincipal(r *http.Request) string {
	if r == nil {
		return ""
	}
	if p := security.PrincipalFromContext(r.Context()); p != "" {
		return p
	}
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return "token:" + ti.UserID
	}
	return ""
}

// newTaskID returns a new task id: unguessable, since it names the run.
func newTaskID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return taskIDPrefix + hex.EncodeToString(b[:]), nil
}

// completeResult is a tool result as JSON, marked resultType "complete" when mark.
func completeResult(res *sdk.CallToolResult, mark bool) json.RawMessage {
	data, err := json.Marshal(res)
	if err != nil {
		data, _ = json.Marshal(sdkResult(tool.ErrorResult("the tool's result cannot be encoded")))
	}
	if !mark {
		return data
	}
	if string(data) == "{}" {
		return json.RawMessage(`{"resultType":"complete"}`)
	}
	return append([]byte(`{"resultType":"complete",`), data[1:]...)
}

// ---- wire shapes ----------------------------------------------------------

// taskStatus is the status of run as the tasks surface names it: a run that
// waits for a timer or a callback is working, as far as its client can tell.
func taskStatus(s durable.State) string {
	if s == durable.StateWaiting {
		return "working"
	}
	return string(s)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func ttlMillis(run durable.Run) int64 {
	if run.TTL > 0 {
		return run.TTL.Milliseconds()
	}
	return taskTTL.Milliseconds()
}

// taskFields are the members of a 2026-07-28 task.
type taskFields struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs"`
}

func taskFieldsOf(run durable.Run) taskFields {
	status := taskStatus(run.State)
	if run.State == durable.StateFailed && !run.Internal {
		// The tool ran and said no: a tool error, completed with isError
		// (detailed), also when the task is created after it ended already.
		status = "completed"
	}
	f := taskFields{TaskID: run.ID, Status: status, CreatedAt: stamp(run.CreatedAt),
		LastUpdatedAt: stamp(run.UpdatedAt), TTLMs: ttlMillis(run), PollIntervalMs: taskPollInterval.Milliseconds()}
	if run.Wait != nil && run.Wait.Message != "" {
		f.StatusMessage = run.Wait.Message
	}
	return f
}

// createTaskResult is the 2026-07-28 answer of a tools/call that made a task.
type createTaskResult struct {
	ResultType string `json:"resultType"`
	taskFields
}

// detailedTask is the 2026-07-28 answer of tasks/get.
type detailedTask struct {
	ResultType string `json:"resultType"`
	taskFields
	InputRequests map[string]any  `json:"inputRequests,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         *jsonrpc.Error  `json:"error,omitempty"`
}

// completeAck is the answer of tasks/cancel and tasks/update.
type completeAck struct {
	ResultType string `json:"resultType"`
}

// legacyTask is a 2025-11-25 Task.
type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

func legacyTaskOf(run durable.Run) legacyTask {
	f := taskFieldsOf(run)
	// 2025-11-25 reports a tool that failed as a failed task.
	return legacyTask{TaskID: f.TaskID, Status: taskStatus(run.State), StatusMessage: f.StatusMessage, CreatedAt: f.CreatedAt,
		LastUpdatedAt: f.LastUpdatedAt, TTL: f.TTLMs, PollInterval: f.PollIntervalMs}
}

type legacyCreateResult struct {
	Task legacyTask `json:"task"`
}

type legacyTaskList struct {
	Tasks      []legacyTask `json:"tasks"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// offerTasks returns the tools of the server that run as tasks, by name, and
// advertises the tasks extension when there are any: tools whose workflow is
// durable, on an app with a durable store.
func (s *mcpServer) offerTasks(sopts *sdk.ServerOptions, tools []*serverTool) map[string]*serverTool {
	runs := durable.For(s.comp.hc)
	if runs == nil {
		return nil
	}
	byName := map[string]*serverTool{}
	for _, t := range tools {
		if t.t.TaskSupport != tool.TaskForbidden && t.t.Workflow() != "" {
			byName[t.info.Name] = t
		}
	}
	if len(byName) == 0 {
		return nil
	}
	if sopts.Capabilities.Extensions == nil {
		sopts.Capabilities.Extensions = map[string]any{}
	}
	sopts.Capabilities.Extensions[tasksExtension] = map[string]any{}
	s.mu.Lock()
	if s.tasks == nil {
		s.tasks = &taskServer{runs: runs, tools: s.currentTaskTools, decode: decodeRunResult,
			caller: tool.NewCaller(s.opts.Name), logger: s.opts.Logger, workflow: s.comp.hc.Workflow}
	}
	s.mu.Unlock()
	return byName
}

// currentTaskTools returns the task tools of the server's last build.
func (s *mcpServer) currentTaskTools() map[string]*serverTool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taskTools
}

// taskRequests is the transport's hook for the tasks surface: nil (no
// interface holding a nil pointer) when the server runs no tool as a task.
func (s *mcpServer) taskRequests() transport.Tasks {
	s.mu.Lock()
	defer s.mu.Unlock()
	if relay := s.taskRelay(); relay != nil {
		return &relayedTasks{own: s.tasks, relay: relay}
	}
	if s.tasks == nil {
		return nil
	}
	return s.tasks
}

// decodeRunResult reads the exchange snapshot a durable run ended with.
func decodeRunResult(raw json.RawMessage) (*exchange.Exchange, error) {
	snap, err := exchange.DecodeSnapshot(raw)
	if err != nil {
		return nil, err
	}
	return exchange.NewFromSnapshot(snap), nil
}

// withTask applies a tool override's task: to t, a copy of the catalogue's tool
// (tool.Tool.WithInput). A tool runs as a task only when its workflow is
// durable: asking for a task of any other tool is an error saying so.
func withTask(t *tool.Tool, task tool.TaskSupport) (*tool.Tool, error) {
	switch task {
	case "":
	case "forbidden":
		t.TaskSupport = tool.TaskForbidden
	case tool.TaskOptional, tool.TaskRequired:
		if t.TaskSupport == tool.TaskForbidden {
			return nil, fmt.Errorf("tool %s: task: %s needs a durable workflow: set durable: true on workflow %s", t.Name, task, t.ID)
		}
		t.TaskSupport = task
	default:
		return nil, fmt.Errorf("tool %s: task is %q; it is one of optional, required, forbidden", t.Name, task)
	}
	return t, nil
}
