package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Tasks on Helix's Streamable HTTP transport.
//
// The go-sdk v1.8.0 knows no tasks: its session refuses tasks/* as unknown
// methods before any middleware runs, and its CallToolResult cannot carry a
// CreateTaskResult. So the transport hands the requests of the tasks surface to
// the server's [Tasks] before the session sees them: every tasks/* request, and
// a tools/call of a tool the server runs as a task. The server answers them from
// its durable store, or leaves them to the session (handled false).

// Tasks serves the tasks surface of one server; set it as [Options.Tasks].
type Tasks interface {
	// TaskTool reports whether the tool named name may run as a task; a
	// tools/call of any other tool never reaches Serve (nor costs it a look).
	TaskTool(name string) bool
	// Serve answers req: a result (marshalled as the JSON-RPC result) or a
	// JSON-RPC error, or handled false to leave req to the session as if the
	// server had no tasks.
	Serve(ctx context.Context, req *TaskRequest) (result any, e *jsonrpc.Error, handled bool)
}

// TaskRequest is one request of the tasks surface.
type TaskRequest struct {
	// HTTP is the POST carrying it (its context holds the verified caller).
	HTTP *http.Request
	Call *jsonrpc.Request
	// Version is the protocol version the request is made with: the session's,
	// or the one a sessionless request names.
	Version string
	// Session is the request's session; nil when it has none (2026-07-28).
	Session *sdk.ServerSession
}

// tasksMethodName reports whether method belongs to the tasks surface.
func tasksMethod(method string) bool { return strings.HasPrefix(method, "tasks/") }

// taskTool reports whether fields name a tool the tasks extension serves
// (serveTask), which the fast path must leave to it.
func (h *StreamableHandler) taskTool(fields *callFields) bool {
	if h.tasks == nil {
		return false
	}
	name, ok := stringField(fields.name)
	return ok && h.tasks.TaskTool(name)
}

// serveTask answers the lone request of a POST through the server's Tasks when it
// belongs to them, and reports whether it did. Batches (2025-11-25 and earlier
// only) go to the session.
func (h *StreamableHandler) serveTask(w http.ResponseWriter, r *http.Request, msgs []jsonrpc.Message, batch bool,
	fields *callFields, version string, session *sdk.ServerSession, jsonOK bool) bool {
	if h.tasks == nil || batch || len(msgs) != 1 {
		return false
	}
	call, ok := msgs[0].(*jsonrpc.Request)
	if !ok || !call.IsCall() {
		return false
	}
	switch {
	case tasksMethod(call.Method):
	case call.Method == "tools/call":
		name, ok := stringField(fields.name)
		if !ok || !h.tasks.TaskTool(name) {
			return false
		}
	default:
		return false
	}
	res, e, handled := h.tasks.Serve(r.Context(), &TaskRequest{HTTP: r, Call: call, Version: version, Session: session})
	if !handled {
		return false
	}
	resp := &jsonrpc.Response{ID: call.ID}
	if e != nil {
		resp.Error = e
	} else if resp.Result, resp.Error = encodeTaskResult(res); resp.Error != nil {
		h.logger.Error("mcp: cannot encode the answer of a tasks request", "method", call.Method, "error", resp.Error)
	}
	if !jsonOK {
		ans := startFastAnswer(w, false)
		ans.write(fastReply{resp: resp})
		return true
	}
	status := http.StatusOK
	if session == nil && version >= statelessProtocol {
		// As a sessionless answer of the session would have it (-32601: 404,
		// -32021: 400).
		if s := statelessErrorStatus(resp); s != 0 {
			status = s
		}
	}
	out, err := json.Marshal(toWire(resp))
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return true
}

func encodeTaskResult(res any) (json.RawMessage, error) {
	data, err := json.Marshal(res)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}
	}
	return data, nil
}

// taskIDField returns params.taskId as sent (nil when absent or unreadable).
func taskIDField(params json.RawMessage) json.RawMessage {
	var p struct {
		TaskID json.RawMessage `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.TaskID
}
