package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// TaskRelay is implemented by an Extension that relays MCP Tasks of its
// primitives (a gateway forwarding them to the upstreams that run them,
// internal/gateway/tasks.go). The server advertises the tasks extension when
// OffersTasks says so, and hands its transport's tasks surface to the relay
// beside its own task tools: a tools/call of a tool the relay claims
// (TaskTool), and every tasks/* request whose task the relay knows. The relay
// answers handled false for a task id it does not hold for the caller; the
// server then answers it as its own (or as unknown).
type TaskRelay interface {
	transport.Tasks
	// OffersTasks reports whether the server should advertise the tasks
	// extension for the relay's primitives.
	OffersTasks() bool
}

// offerRelayedTasks advertises the tasks extension for the extension's relayed
// tasks.
func (s *mcpServer) offerRelayedTasks(sopts *sdk.ServerOptions) {
	relay, ok := s.opts.Extension.(TaskRelay)
	if !ok || !relay.OffersTasks() {
		return
	}
	if sopts.Capabilities.Extensions == nil {
		sopts.Capabilities.Extensions = map[string]any{}
	}
	sopts.Capabilities.Extensions[tasksExtension] = map[string]any{}
}

// relayedTasks is the tasks surface of a server whose extension relays tasks:
// its own task tools first, then the relay's.
type relayedTasks struct {
	own   *taskServer // nil: the server runs none of its own tools as tasks
	relay TaskRelay
}

func (t *relayedTasks) TaskTool(name string) bool {
	return (t.own != nil && t.own.TaskTool(name)) || t.relay.TaskTool(name)
}

func (t *relayedTasks) Serve(ctx context.Context, req *transport.TaskRequest) (any, *jsonrpc.Error, bool) {
	if req.Call.Method == "tools/call" && t.own != nil {
		var p taskParams
		if json.Unmarshal(req.Call.Params, &p) == nil && t.own.TaskTool(p.Name) {
			return t.own.Serve(ctx, req)
		}
	}
	if res, e, handled := t.relay.Serve(ctx, req); handled {
		return res, e, true
	}
	if t.own != nil {
		return t.own.Serve(ctx, req)
	}
	if req.Call.Method == "tools/call" || req.Version < protocolStateless {
		return nil, nil, false
	}
	// A task the relay does not hold for this caller, on a server with no
	// tasks of its own: unknown, exactly as a missing task of its own is.
	var p taskParams
	_ = json.Unmarshal(req.Call.Params, &p)
	if p.TaskID == nil {
		return nil, invalidParams("params need a string \"taskId\""), true
	}
	return nil, invalidParams(fmt.Sprintf("unknown task %q", *p.TaskID)), true
}

// taskRelay returns the extension's task relay when it offers tasks.
func (s *mcpServer) taskRelay() TaskRelay {
	relay, ok := s.opts.Extension.(TaskRelay)
	if !ok || !relay.OffersTasks() {
		return nil
	}
	return relay
}
