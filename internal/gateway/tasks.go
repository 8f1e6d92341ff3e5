package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway/fastrelay"
)

// MCP Tasks through the gateway (the 2026-07-28 tasks extension).
//
// The go-sdk client can read no task result, so the tasks surface is relayed
// as raw JSON-RPC: a tools/call of an upstream tool whose caller declares the
// tasks extension, and tasks/get, tasks/update and tasks/cancel of the tasks
// such calls created, are posted as they came (the tool's upstream name put
// back) to the Streamable HTTP upstream that serves the tool, without a
// session, and its answer goes back as the bytes it is. Policy (on the call
// that creates the task), credentials and audit are those of every relayed
// request (do).
//
// The gateway remembers which upstream and which caller each task it relayed
// belongs to: a task id it did not hand to this caller is unknown, exactly as a
// missing one is, so that no client reaches another's task (the upstream sees
// the gateway's credentials for every caller and could not tell them apart).
// The memory is the gateway process's: its tasks are unknown after a restart
// and to other replicas.

// tasksExtensionName is the name of the tasks extension of MCP 2026-07-28.
const tasksExtensionName = "io.modelcontextprotocol/tasks"

// maxTaskAnswer bounds an upstream's answer to a request of the tasks surface.
const maxTaskAnswer = fastrelay.DefaultMaxMessageBytes

// relayedTask is a task the gateway relayed: where it runs and whose it is.
type relayedTask struct {
	up *upstream
	// owner is the creating caller's Principal.ID ("" anonymous).
	owner string
	// served and upstreamName name the tool that created it.
	served, upstreamName string
	// expires is when the upstream may forget the task (its ttlMs): the
	// gateway forgets it then too, so that the table does not grow without end.
	expires time.Time
}

// Bounds of the task table.
const (
	// maxTaskTTL is how long the gateway remembers a task at most (also one
	// whose upstream gave no ttlMs).
	maxTaskTTL = 24 * time.Hour
	// taskPruneAt is the size of the table from which a new task first makes
	// it drop the expired ones.
	taskPruneAt = 1024
)

// taskTable maps the ids of the tasks the gateway relayed to their owners.
type taskTable struct {
	mu        sync.Mutex
	tasks     map[string]relayedTask
	now       func() time.Time // time.Now; tests set it
	pruneNext int              // the size at which put next drops expired tasks
}

func (t *taskTable) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// put remembers task id for ttl (capped at maxTaskTTL; 0 means the cap).
func (t *taskTable) put(id string, rt relayedTask, ttl time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tasks == nil {
		t.tasks = map[string]relayedTask{}
	}
	now := t.clock()
	if ttl <= 0 || ttl > maxTaskTTL {
		ttl = maxTaskTTL
	}
	rt.expires = now.Add(ttl)
	if len(t.tasks) >= max(t.pruneNext, taskPruneAt) {
		for k, v := range t.tasks {
			if !now.Before(v.expires) {
				delete(t.tasks, k)
			}
		}
		t.pruneNext = 2 * len(t.tasks)
	}
	t.tasks[id] = rt
}

// get returns the task id of owner; ok is false for an unknown id, an expired
// one and another caller's task alike.
func (t *taskTable) get(id, owner string) (relayedTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rt, ok := t.tasks[id]
	if ok && !t.clock().Before(rt.expires) {
		delete(t.tasks, id)
		return relayedTask{}, false
	}
	if !ok || rt.owner != owner {
		return relayedTask{}, false
	}
	return rt, true
}

// OffersTasks reports whether the gateway relays tasks: when an upstream is
// reached over Streamable HTTP (server.TaskRelay).
func (g *Gateway) OffersTasks() bool {
	for _, up := range g.ups {
		if taskUpstream(up) {
			return true
		}
	}
	return false
}

// taskUpstream reports whether tasks of up can be relayed: raw JSON-RPC needs
// Streamable HTTP.
func taskUpstream(up *upstream) bool {
	return up.cfg.Command == "" && (up.cfg.Transport == "" || up.cfg.Transport == config.UpstreamHTTP)
}

// TaskTool reports whether a tools/call of name may create a relayed task: a
// tool of a Streamable HTTP upstream (transport.Tasks).
func (g *Gateway) TaskTool(name string) bool {
	up, _ := g.upstreamTool(name)
	return up != nil && taskUpstream(up)
}

// taskParams are the members of the tasks surface's params the relay reads.
type taskParams struct {
	Meta   map[string]json.RawMessage `json:"_meta"`
	Name   string                     `json:"name"`
	TaskID *string                    `json:"taskId"`
}

// declaresTasks reports whether a request's _meta client capabilities declare
// the tasks extension.
func (p *taskParams) declaresTasks() bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	raw, ok := p.Meta[sdk.MetaKeyClientCapabilities]
	if !ok || json.Unmarshal(raw, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[tasksExtensionName]
	return ok
}

// Serve answers a request of the tasks surface of protocol 2026-07-28
// (transport.Tasks). Everything else is left to the server (handled false):
// calls that do not declare the extension (they run as plain calls), the
// tasks of older protocols, and task ids the gateway does not hold for the
// caller.
func (g *Gateway) Serve(ctx context.Context, req *transport.TaskRequest) (any, *jsonrpc.Error, bool) {
	if req.Version < newEraVersion {
		return nil, nil, false
	}
	var p taskParams
	if len(req.Call.Params) > 0 && json.Unmarshal(req.Call.Params, &p) != nil {
		return nil, nil, false // the server answers it as any bad request
	}
	declared := p.declaresTasks()
	switch req.Call.Method {
	case MethodCallTool:
		if !declared {
			return nil, nil, false
		}
		return g.startTask(ctx, req, &p)
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !declared {
			return nil, missingTasks(req.Call.Method + " is part of the tasks extension"), true
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not part of the tasks extension of protocol %s (tasks/get carries the result)", req.Call.Method, req.Version)}, true
	}
	if p.TaskID == nil {
		return nil, nil, false
	}
	sreq := taskCallRequest(req, "", nil)
	who := g.principal(sreq)
	rt, ok := g.tasks.get(*p.TaskID, who.ID)
	if !ok {
		return nil, nil, false
	}
	c := g.newCall(sreq, rt.up, req.Call.Method, KindTool, rt.served, rt.upstreamName, nil)
	c.Principal = who
	res, err := g.do(ctx, &relayed{up: rt.up, req: sreq, call: c, followUp: true}, g.postTask(req, ""), rawResult)
	return taskAnswer(res, err)
}

// startTask relays a task-augmented tools/call and remembers the task it
// creates.
func (g *Gateway) startTask(ctx context.Context, req *transport.TaskRequest, p *taskParams) (any, *jsonrpc.Error, bool) {
	up, upstreamName := g.upstreamTool(p.Name)
	if up == nil || !taskUpstream(up) {
		return nil, nil, false
	}
	var args struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(req.Call.Params, &args)
	sreq := taskCallRequest(req, p.Name, args.Arguments)
	c := g.newCall(sreq, up, MethodCallTool, KindTool, p.Name, upstreamName, args.Arguments)
	if g.guard.WantsResult(c) {
		// A result guard reads tool results, not tasks: the call runs
		// without a task, through the relay that guards its result.
		return nil, nil, false
	}
	res, err := g.do(ctx, &relayed{up: up, req: sreq, call: c}, g.postTask(req, upstreamName), rawResult)
	if raw, ok := res.(json.RawMessage); ok && err == nil {
		var created struct {
			ResultType string `json:"resultType"`
			TaskID     string `json:"taskId"`
			TTLMs      int64  `json:"ttlMs"`
		}
		if json.Unmarshal(raw, &created) == nil && created.ResultType == "task" && created.TaskID != "" {
			ttl := time.Duration(min(created.TTLMs, int64(maxTaskTTL/time.Millisecond))) * time.Millisecond
			g.tasks.put(created.TaskID, relayedTask{up: up, owner: c.Principal.ID, served: p.Name, upstreamName: upstreamName}, ttl)
		}
	}
	return taskAnswer(res, err)
}

// taskCallRequest is the go-sdk request a relayed tasks request stands for,
// as the fast path builds it (fast.go): the principal and the audience are
// read from it.
func taskCallRequest(req *transport.TaskRequest, name string, args json.RawMessage) *sdk.CallToolRequest {
	return &sdk.CallToolRequest{Session: req.Session,
		Params: &sdk.CallToolParamsRaw{Name: name, Arguments: args},
		Extra:  &sdk.RequestExtra{TokenInfo: auth.TokenInfoFromContext(req.HTTP.Context()), Header: req.HTTP.Header}}
}

func rawResult(raw json.RawMessage) (any, error) { return raw, nil }

// taskAnswer turns do's outcome into the transport's answer.
func taskAnswer(res any, err error) (any, *jsonrpc.Error, bool) {
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			return fastrelay.ErrorResult(ref.Message), nil, true
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return nil, werr, true
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}, true
	}
	if raw, ok := res.(json.RawMessage); ok {
		return raw, nil, true
	}
	return res, nil, true
}

// missingTasks is the -32021 answer to a request that needs the tasks
// extension its client did not declare.
func missingTasks(why string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
		"extensions": map[string]any{tasksExtensionName: map[string]any{}}}})
	return &jsonrpc.Error{Code: sdk.CodeMissingRequiredClientCapabilities,
		Message: why + ": declare the " + tasksExtensionName + " extension in the request's client capabilities", Data: data}
}

// postTask returns do's run for a tasks request: the request as it came, the
// tool's upstream name put back (upstreamName, for tools/call), posted to the
// upstream without a session.
func (g *Gateway) postTask(req *transport.TaskRequest, upstreamName string) func(ctx context.Context, cs *sdk.ClientSession, _ string) (any, error) {
	return func(ctx context.Context, cs *sdk.ClientSession, _ string) (any, error) {
		router, ok := g.routerOf(cs)
		if !ok {
			return nil, errors.New("the upstream session cannot carry tasks")
		}
		url, hc, ok := router.FastRoute(cs)
		if !ok {
			return nil, errors.New("the upstream session cannot carry tasks")
		}
		params := req.Call.Params
		if upstreamName != "" {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(params, &m); err != nil {
				return nil, err
			}
			m["name"], _ = json.Marshal(upstreamName)
			var err error
			if params, err = json.Marshal(m); err != nil {
				return nil, err
			}
		}
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": req.Call.Method, "params": params})
		if err != nil {
			return nil, err
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		for k, vs := range req.HTTP.Header {
			// The protocol's own headers (version, method, name, params) go
			// along; the caller's credentials and session do not.
			if ck := http.CanonicalHeaderKey(k); strings.HasPrefix(ck, "Mcp-") && ck != "Mcp-Session-Id" {
				hreq.Header[ck] = vs
			}
		}
		hreq.Header.Set("MCP-Protocol-Version", req.Version)
		if upstreamName != "" {
			hreq.Header.Set("Mcp-Name", upstreamName)
		}
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(hreq)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return readTaskAnswer(resp)
	}
}

// routerOf returns the fast router of the pool holding cs.
func (g *Gateway) routerOf(cs *sdk.ClientSession) (fastRouter, bool) {
	for _, up := range g.ups {
		if r, ok := up.pool.(fastRouter); ok {
			if _, _, ok := r.FastRoute(cs); ok {
				return r, true
			}
		}
	}
	return nil, false
}

// readTaskAnswer reads the JSON-RPC response of a tasks request: a JSON body,
// or the response on an event stream (whatever else the stream carries is
// dropped: a sessionless 2026-07-28 request gets no requests of the server).
func readTaskAnswer(resp *http.Response) (any, error) {
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), maxTaskAnswer)
		var data []byte
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case bytes.HasPrefix(line, []byte("data:")):
				data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
				if len(data) > maxTaskAnswer {
					return nil, errors.New("the upstream's answer is too large")
				}
			case len(line) == 0 && len(data) > 0:
				if res, ok, err := taskResponse(data); ok {
					return res, err
				}
				data = data[:0]
			}
		}
		if len(data) > 0 {
			if res, ok, err := taskResponse(data); ok {
				return res, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("the upstream's stream ended without an answer")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTaskAnswer+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxTaskAnswer {
		return nil, errors.New("the upstream's answer is too large")
	}
	if res, ok, err := taskResponse(body); ok {
		return res, err
	}
	return nil, fmt.Errorf("the upstream answered HTTP %d without a JSON-RPC response", resp.StatusCode)
}

// taskResponse reads data as a JSON-RPC response: its result, or its error;
// ok is false for anything else.
func taskResponse(data []byte) (res any, ok bool, err error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if json.Unmarshal(data, &m) != nil || len(m.ID) == 0 {
		return nil, false, nil
	}
	if m.Error != nil {
		return nil, true, m.Error
	}
	if m.Result == nil {
		return nil, false, nil
	}
	return json.RawMessage(append([]byte(nil), m.Result...)), true, nil
}

// guardBefore runs the policy's Before on a relayed request, but for the
// follow-ups of a task.
func (g *Gateway) guardBefore(ctx context.Context, rq *relayed) error {
	if rq.followUp {
		return nil
	}
	return g.guard.Before(ctx, rq.call)
}
