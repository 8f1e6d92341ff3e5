package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/arvenza/helix/internal/durable"
)

// taskServer answers as a 2026-07-28 server offering tasks: tools/call creates a
// task, whose tasks/get answers are given by get (called with the number of the
// tasks/get, from 1). sse sends the answers as event streams.
func taskServer(t *testing.T, sse bool, get func(n int64) map[string]any) *wireServer {
	var gets atomic.Int64
	answer := func(w http.ResponseWriter, id json.RawMessage, result any) {
		if !sse {
			writeResult(w, id, result)
			return
		}
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: 1\nretry: 100\ndata: \n\nevent: message\ndata: %s\n\n", data)
	}
	return newWireServer(t, nil, func(w http.ResponseWriter, r *http.Request, msg *wireMsg) bool {
		switch msg.Method {
		case methodDiscover:
			answer(w, msg.ID, map[string]any{"resultType": "complete", "supportedVersions": []string{protocolModern},
				"capabilities": map[string]any{"tools": map[string]any{}, "extensions": map[string]any{tasksExtension: map[string]any{}}},
				"serverInfo":   map[string]any{"name": "tasks", "version": "1"}})
		case "tools/call":
			answer(w, msg.ID, map[string]any{"resultType": "task", "taskId": "t-1", "status": "working",
				"createdAt": "2026-12-05T00:00:00Z", "lastUpdatedAt": "2026-12-05T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 1})
		case "tasks/get":
			answer(w, msg.ID, get(gets.Add(1)))
		case "tasks/cancel":
			answer(w, msg.ID, map[string]any{"resultType": "complete"})
		default:
			return false
		}
		return true
	})
}

func working(n int64) map[string]any {
	return map[string]any{"taskId": "t-1", "status": "working", "statusMessage": fmt.Sprintf("step %d", n), "pollIntervalMs": 1}
}

// TestToolCallBecomesTask: a server that answers a call with a task is polled with
// tasks/get until the task completes, and its inlined result is the call's result.
func TestToolCallBecomesTask(t *testing.T) {
	t.Parallel()
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			t.Parallel()
			ws := taskServer(t, sse, func(n int64) map[string]any {
				if n < 3 {
					return working(n)
				}
				return map[string]any{"taskId": "t-1", "status": "completed",
					"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done after 3 polls"}}}}
			})
			c := newModernConn(t, ws)
			res, err := c.CallTool(context.Background(), "slow", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := BodyFromResult(res); got != "done after 3 polls" {
				t.Errorf("result %q, want the task's inlined result", got)
			}
			gets := ws.requests("tasks/get")
			if len(gets) != 3 {
				t.Fatalf("tasks/get sent %d times, want 3 (%v)", len(gets), ws.methods())
			}
			g := gets[0]
			var params struct {
				TaskID string         `json:"taskId"`
				Meta   map[string]any `json:"_meta"`
			}
			_ = json.Unmarshal(g.Params, &params)
			if params.TaskID != "t-1" || g.Header.Get("Mcp-Method") != "tasks/get" || g.Header.Get("MCP-Protocol-Version") != protocolModern ||
				params.Meta["io.modelcontextprotocol/protocolVersion"] != protocolModern {
				t.Errorf("tasks/get: params %s, headers %v", g.Params, g.Header)
			}
		})
	}
}

// TestTaskFailureIsAToolError: a failed task reports the server's error as the
// call's protocol error.
func TestTaskFailureIsAToolError(t *testing.T) {
	t.Parallel()
	ws := taskServer(t, false, func(int64) map[string]any {
		return map[string]any{"taskId": "t-1", "status": "failed", "error": map[string]any{"code": -32603, "message": "worker crashed"}}
	})
	c := newModernConn(t, ws)
	_, err := c.CallTool(context.Background(), "slow", nil)
	var te *ToolError
	if !errors.As(err, &te) || te.Code != -32603 || te.Message != "worker crashed" || !te.Protocol {
		t.Fatalf("error %v, want a ToolError with the task's error", err)
	}
}

// TestTaskCancelledOnTimeout: a task still working when the call's time runs out
// is cancelled with tasks/cancel, and the call fails saying so.
func TestTaskCancelledOnTimeout(t *testing.T) {
	t.Parallel()
	ws := taskServer(t, false, working)
	// Long enough for the connection and a first poll on a loaded machine.
	c, err := NewConn(Config{Endpoint: ws.url, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.CallTool(context.Background(), "slow", nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within 2s: task t-1 was cancelled (tasks/cancel) while working") {
		t.Fatalf("error %v, want the timeout and the cancelled task", err)
	}
	if n := len(ws.requests("tasks/cancel")); n != 1 {
		t.Errorf("tasks/cancel sent %d times, want once (%v)", n, ws.methods())
	}
	if n := len(ws.requests("tasks/get")); n < 1 {
		t.Errorf("tasks/get sent %d times before the timeout, want polling", n)
	}
}

// TestNoTasksWithoutTheExtension: a server that does not offer tasks gets its
// answers read as results, whatever they hold.
func TestNoTasksWithoutTheExtension(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, nil, func(w http.ResponseWriter, _ *http.Request, msg *wireMsg) bool {
		if msg.Method != "tools/call" {
			return false
		}
		writeResult(w, msg.ID, map[string]any{"resultType": "task", "taskId": "t-1", "status": "working"})
		return true
	})
	c := newModernConn(t, ws)
	if _, err := c.CallTool(context.Background(), "slow", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(ws.requests("tasks/get")); n != 0 {
		t.Errorf("tasks/get sent to a server without the extension")
	}
}

// TestClientDeclaresTasks: server/discover carries the tasks extension in the
// client's capabilities.
func TestClientDeclaresTasks(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, nil, nil)
	c := newModernConn(t, ws)
	if _, err := c.CallTool(context.Background(), "x", nil); err != nil {
		t.Fatal(err)
	}
	d := ws.requests(methodDiscover)[0]
	if !strings.Contains(string(d.Params), `"extensions":{"`+tasksExtension+`":{}}`) {
		t.Errorf("server/discover params %s do not declare %s", d.Params, tasksExtension)
	}
}

// staticOAuth is an OAuth handler that always has the same token, as a handler
// with a stored or discovered token has after its first authorization.
type staticOAuth struct{ token string }

func (s staticOAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: s.token, TokenType: "Bearer"}), nil
}

func (staticOAuth) Authorize(context.Context, *http.Request, *http.Response) error {
	return errors.New("no authorization in this test")
}

// TestTaskRequestsCarryTheOAuthToken: tasks/get and tasks/cancel are sent by the
// Conn itself, not through the go-sdk's transport, so they must carry the token of
// the connection's OAuth handler (auth: {type: oauth2, discover: true} or login:
// true) as the call did; without it a protected server refuses every poll.
func TestTaskRequestsCarryTheOAuthToken(t *testing.T) {
	t.Parallel()
	ws := taskServer(t, false, func(n int64) map[string]any {
		if n < 2 {
			return working(n)
		}
		return map[string]any{"taskId": "t-1", "status": "completed",
			"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}}}
	})
	c, err := NewConn(Config{Endpoint: ws.url, Timeout: 10 * time.Second, OAuth: staticOAuth{token: "tok-123"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.CallTool(context.Background(), "slow", nil); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"tools/call", "tasks/get"} {
		for _, r := range ws.requests(method) {
			if got := r.Header.Get("Authorization"); got != "Bearer tok-123" {
				t.Errorf("%s sent with Authorization %q, want the handler's token", method, got)
			}
		}
	}
}

// memJournal is a durable run's journal kept across "processes": entries are
// recorded in order; a resumed run gets them back in the same order. killAfter,
// when set, makes Do fail as a process killed right after the entry was
// recorded would (the entry is in, the caller never sees it).
type memJournal struct {
	entries   []journalEntry
	next      int
	killAfter bool
}

type journalEntry struct {
	name string
	data json.RawMessage
}

var errKilled = errors.New("killed after the journal entry was recorded")

func (j *memJournal) Do(ctx context.Context, name string, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if j.next < len(j.entries) {
		e := j.entries[j.next]
		j.next++
		if e.name != name {
			return nil, fmt.Errorf("journal entry %d is %q, not %q", j.next-1, e.name, name)
		}
		return e.data, nil
	}
	data, err := fn(ctx)
	if err != nil {
		return nil, err
	}
	j.entries = append(j.entries, journalEntry{name: name, data: data})
	j.next++
	if j.killAfter {
		return nil, errKilled
	}
	return data, nil
}

// resume is the journal as a restarted run sees it.
func (j *memJournal) resume() *memJournal {
	return &memJournal{entries: j.entries}
}

// TestDurableRunPollsItsTaskAfterRestart: in a durable run the task a call
// made is journaled before it is polled, so the run resumed after a crash polls
// the same task (on a new connection, as a new process would) and the tool is
// called once.
func TestDurableRunPollsItsTaskAfterRestart(t *testing.T) {
	t.Parallel()
	ws := taskServer(t, false, func(n int64) map[string]any {
		if n < 2 {
			return working(n)
		}
		return map[string]any{"taskId": "t-1", "status": "completed",
			"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done once"}}}}
	})
	first := &memJournal{killAfter: true}
	c1 := newModernConn(t, ws)
	if _, err := c1.CallTool(durable.WithJournal(context.Background(), first), "slow", nil); !errors.Is(err, errKilled) {
		t.Fatalf("first attempt: %v, want the kill", err)
	}
	if n := len(ws.requests("tasks/get")) + len(ws.requests("tasks/cancel")); n != 0 {
		t.Fatalf("the killed attempt polled or cancelled the task (%v)", ws.methods())
	}
	c2 := newModernConn(t, ws)
	res, err := c2.CallTool(durable.WithJournal(context.Background(), first.resume()), "slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := BodyFromResult(res); got != "done once" {
		t.Fatalf("result %q", got)
	}
	if n := len(ws.requests("tools/call")); n != 1 {
		t.Fatalf("tools/call sent %d times, want once (%v)", n, ws.methods())
	}
	gets := ws.requests("tasks/get")
	if len(gets) != 2 || gets[0].Header.Get("Mcp-Name") != "t-1" {
		t.Fatalf("tasks/get after the restart: %d, Mcp-Name %q", len(gets), gets[0].Header.Get("Mcp-Name"))
	}
}

// TestDurableRunKeepsAPlainAnswer: an answer that is a result is journaled
// too, so the resumed run does not call again.
func TestDurableRunKeepsAPlainAnswer(t *testing.T) {
	t.Parallel()
	ws := newWireServer(t, nil, func(w http.ResponseWriter, r *http.Request, msg *wireMsg) bool {
		if msg.Method != "tools/call" {
			return false
		}
		writeResult(w, msg.ID, map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "plain"}}})
		return true
	})
	j := &memJournal{}
	c := newModernConn(t, ws)
	for range 2 {
		res, err := c.CallTool(durable.WithJournal(context.Background(), j), "echo", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := BodyFromResult(res); got != "plain" {
			t.Fatalf("result %q", got)
		}
		j = j.resume()
	}
	if n := len(ws.requests("tools/call")); n != 1 {
		t.Fatalf("tools/call sent %d times, want once", n)
	}
}

// TestTaskPollingOutlastsARestart: polls that get no answer for a while (the
// server restarting, HTTP 503 from its proxy) do not end the call: the task
// lives in the server's store, and polling goes on until it answers.
func TestTaskPollingOutlastsARestart(t *testing.T) {
	t.Parallel()
	var gets atomic.Int64
	ws := newWireServer(t, nil, func(w http.ResponseWriter, r *http.Request, msg *wireMsg) bool {
		switch msg.Method {
		case methodDiscover:
			writeResult(w, msg.ID, map[string]any{"resultType": "complete", "supportedVersions": []string{protocolModern},
				"capabilities": map[string]any{"tools": map[string]any{}, "extensions": map[string]any{tasksExtension: map[string]any{}}},
				"serverInfo":   map[string]any{"name": "tasks", "version": "1"}})
		case "tools/call":
			writeResult(w, msg.ID, map[string]any{"resultType": "task", "taskId": "t-1", "status": "working",
				"createdAt": "2026-12-05T00:00:00Z", "lastUpdatedAt": "2026-12-05T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 1})
		case "tasks/get":
			if gets.Add(1) <= 3 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			}
			writeResult(w, msg.ID, map[string]any{"taskId": "t-1", "status": "completed",
				"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done after the restart"}}}})
		case "tasks/cancel":
			t.Error("the task was cancelled")
			writeResult(w, msg.ID, map[string]any{"resultType": "complete"})
		default:
			return false
		}
		return true
	})
	c := newModernConn(t, ws)
	res, err := c.CallTool(context.Background(), "slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := BodyFromResult(res); got != "done after the restart" || gets.Load() != 4 {
		t.Fatalf("result %v after %d polls", got, gets.Load())
	}
}
