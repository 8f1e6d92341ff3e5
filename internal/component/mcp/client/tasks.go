package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/durable"
)

// Tasks (the io.modelcontextprotocol/tasks extension of protocol 2026-07-28).
//
// A server that offers the extension may answer a tools/call with a task instead
// of the result (resultType "task", with a taskId): the tool goes on running, and
// the client asks for its state with tasks/get until the task is completed (the
// result is inlined), failed (a JSON-RPC error is inlined) or cancelled. The go-sdk
// v1.8 has no client side of tasks: it decodes such an answer as an empty
// CallToolResult. So the Conn declares the extension, keeps the answer of a
// tools/call to a server that offers it (callTracker.watchTasks), and when that
// answer is a task, polls it (awaitTask) with requests of its own on the session's
// HTTP client (the auth and headers of the connection apply). When the call's
// time runs out the task is cancelled (tasks/cancel).

const tasksExtension = "io.modelcontextprotocol/tasks"

// Polling: the first tasks/get goes after the server's pollIntervalMs (else
// taskPollMin); each later wait doubles, up to taskPollMax (or the server's
// interval, when it asks for longer).
const (
	taskPollMin = 100 * time.Millisecond
	taskPollMax = 5 * time.Second
	// taskCancelWait bounds the tasks/cancel sent after the call's time ran out.
	taskCancelWait = 5 * time.Second
	// maxTaskCapture bounds how much of a tools/call answer is kept to look for a
	// task: an answer that creates a task is small, a longer one is a result.
	maxTaskCapture = 64 << 10
)

// clientOptions are the go-sdk client's options: the go-sdk's default
// capabilities (roots, with list changes) and the tasks extension.
func clientOptions() *sdk.ClientOptions {
	return &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28; the go-sdk's default capability, kept because setting Capabilities replaces the default
		RootsV2:    &sdk.RootCapabilities{ListChanged: true},
		Extensions: map[string]any{tasksExtension: map[string]any{}},
	}}
}

// offersTasks reports whether the server of s offers tasks over Streamable HTTP.
func (c *Conn) offersTasks(s *sdk.ClientSession) bool {
	if c.cfg.Transport != TransportHTTP {
		return false
	}
	init := s.InitializeResult()
	if init == nil || init.Capabilities == nil || init.ProtocolVersion < protocolModern {
		return false
	}
	_, ok := init.Capabilities.Extensions[tasksExtension]
	return ok
}

// task is the state of a task as tools/call (CreateTaskResult) and tasks/get
// (DetailedTask) give it.
type task struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Error          *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// taskCapture keeps the first bytes of a tools/call answer while the SDK reads it.
type taskCapture struct {
	io.ReadCloser
	contentType string

	mu       sync.Mutex
	buf      bytes.Buffer
	overflow bool
}

func (tc *taskCapture) Read(p []byte) (int, error) {
	n, err := tc.ReadCloser.Read(p)
	tc.mu.Lock()
	if !tc.overflow {
		if tc.buf.Len()+n > maxTaskCapture {
			tc.overflow = true
			tc.buf = bytes.Buffer{}
		} else {
			tc.buf.Write(p[:n])
		}
	}
	tc.mu.Unlock()
	return n, err
}

func (t *callTracker) watchTasksOf(on bool) {
	t.mu.Lock()
	t.watchTasks = on
	t.mu.Unlock()
}

func (t *callTracker) watchingTasks() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.watchTasks
}

// captureTaskAnswer wraps the body of a tools/call answer so that the task it may
// create can be read once the SDK is done with it.
func (t *callTracker) captureTaskAnswer(resp *http.Response) {
	tc := &taskCapture{ReadCloser: resp.Body, contentType: resp.Header.Get("Content-Type")}
	resp.Body = tc
	t.mu.Lock()
	t.taskAnswer = tc
	t.mu.Unlock()
}

// createdTask returns the task the tools/call answer created, or nil when the
// answer was a result.
func (t *callTracker) createdTask() *task {
	t.mu.Lock()
	tc := t.taskAnswer
	t.mu.Unlock()
	if tc == nil {
		return nil
	}
	tc.mu.Lock()
	data, overflow := bytes.Clone(tc.buf.Bytes()), tc.overflow
	tc.mu.Unlock()
	if overflow {
		return nil
	}
	res, err := rpcResult(tc.contentType, data)
	if err != nil {
		return nil
	}
	var tk task
	if json.Unmarshal(res, &tk) != nil || tk.ResultType != "task" || tk.TaskID == "" {
		return nil
	}
	return &tk
}

// rpcResult returns the result of the JSON-RPC response in an HTTP answer: a JSON
// body, or the first response among the events of an SSE stream.
func rpcResult(contentType string, body []byte) (json.RawMessage, error) {
	type response struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	decode := func(data []byte) (json.RawMessage, bool, error) {
		var r response
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, false, err
		}
		if r.Error != nil {
			return nil, true, fmt.Errorf("server error %d: %s", r.Error.Code, r.Error.Message)
		}
		return r.Result, r.Result != nil, nil
	}
	media, _, _ := mime.ParseMediaType(contentType)
	if media != "text/event-stream" {
		res, _, err := decode(body)
		return res, err
	}
	var data bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), len(body)+1)
	flush := func() (json.RawMessage, bool, error) {
		if data.Len() == 0 {
			return nil, false, nil
		}
		res, done, err := decode(data.Bytes())
		data.Reset()
		if err != nil && !done {
			return nil, false, nil // not a response (a notification, a priming event)
		}
		return res, done, err
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if res, done, err := flush(); done {
				return res, err
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data.WriteString(strings.TrimPrefix(v, " "))
			data.WriteByte('\n')
		}
	}
	if res, done, err := flush(); done {
		return res, err
	}
	return nil, errors.New("no JSON-RPC response in the event stream")
}

// awaitTask polls tk until it ends and returns the tool's result. When ctx ends
// first, the task is cancelled, unless keep says to leave it running.
func (c *Conn) awaitTask(ctx context.Context, tool string, tk *task, keep func() bool) (*sdk.CallToolResult, error) {
	wait := max(time.Duration(tk.PollIntervalMs)*time.Millisecond, taskPollMin)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var unreachableSince time.Time // the first of the polls in a row that got no answer
	for {
		select {
		case <-ctx.Done():
			if keep() {
				return nil, fmt.Errorf("task %s, %s, is left running for the resumed run: %w", tk.TaskID, describeTask(tk), ctx.Err())
			}
			c.cancelTask(ctx, tk.TaskID)
			return nil, fmt.Errorf("task %s was cancelled (tasks/cancel) while %s: %w", tk.TaskID, describeTask(tk), ctx.Err())
		case <-timer.C:
		}
		next, err := c.taskRequest(ctx, "tasks/get", tk.TaskID)
		if err != nil {
			if ctx.Err() != nil {
				continue // cancelled above
			}
			var m *momentaryError
			if errors.As(err, &m) {
				// The server is restarting, or a replica is taking over: the
				// task lives in its store, so polling goes on for a while.
				if unreachableSince.IsZero() {
					unreachableSince = time.Now()
				}
				if time.Since(unreachableSince) < taskUnreachableMax {
					wait = min(max(wait*2, taskPollMin), taskPollMax)
					timer.Reset(wait)
					continue
				}
			}
			c.cancelTask(ctx, tk.TaskID)
			return nil, fmt.Errorf("task %s: tasks/get: %w", tk.TaskID, err)
		}
		unreachableSince = time.Time{}
		var st task
		if err := json.Unmarshal(next, &st); err != nil {
			c.cancelTask(ctx, tk.TaskID)
			return nil, fmt.Errorf("task %s: tasks/get answered something that is not a task: %v", tk.TaskID, err)
		}
		switch st.Status {
		case "completed":
			var res sdk.CallToolResult
			if len(st.Result) == 0 || json.Unmarshal(st.Result, &res) != nil {
				return nil, fmt.Errorf("task %s completed without a tool result", tk.TaskID)
			}
			return &res, nil
		case "failed":
			if st.Error == nil {
				return nil, &ToolError{Tool: tool, Message: "task " + tk.TaskID + " failed: " + st.StatusMessage, Protocol: true}
			}
			return nil, &ToolError{Tool: tool, Code: st.Error.Code, Message: st.Error.Message, Protocol: true}
		case "cancelled":
			return nil, fmt.Errorf("task %s was cancelled by the server: %s", tk.TaskID, st.StatusMessage)
		case "input_required":
			c.cancelTask(ctx, tk.TaskID)
			return nil, fmt.Errorf("task %s asks for input (input_required), which this client does not give; it was cancelled", tk.TaskID)
		}
		tk.Status, tk.StatusMessage = st.Status, st.StatusMessage
		wait = min(wait*2, max(taskPollMax, time.Duration(st.PollIntervalMs)*time.Millisecond))
		wait = max(wait, time.Duration(st.PollIntervalMs)*time.Millisecond)
		timer.Reset(wait)
	}
}

// taskUnreachableMax is how long polls may go unanswered in a row (a server
// restarting, a replica taking over) before the call gives up on its task.
const taskUnreachableMax = time.Minute

// momentaryError is a task request that got no answer from the server (no
// connection, or an HTTP status saying to come back later).
type momentaryError struct{ err error }

func (e *momentaryError) Error() string { return e.err.Error() }
func (e *momentaryError) Unwrap() error { return e.err }

func describeTask(tk *task) string {
	if tk.StatusMessage != "" {
		return tk.Status + " (" + tk.StatusMessage + ")"
	}
	return tk.Status
}

// setOAuthToken gives req the token of the connection's OAuth handler, as the
// go-sdk's transport gives it to the requests it sends: tasks/* requests go
// around that transport. Static credentials (auth: bearer, api-key, oauth2 with
// token_url) are added by the HTTP client's own transport.
func (c *Conn) setOAuthToken(ctx context.Context, req *http.Request) error {
	if c.cfg.OAuth == nil {
		return nil
	}
	ts, err := c.cfg.OAuth.TokenSource(ctx)
	if err != nil || ts == nil {
		return err
	}
	tok, err := ts.Token()
	if err != nil {
		return fmt.Errorf("getting the OAuth token for %s: %w", req.Header.Get("Mcp-Method"), err)
	}
	tok.SetAuthHeader(req)
	return nil
}

// cancelTask asks the server to cancel a task whose caller stopped waiting; the
// request has its own short deadline, since ctx may be over.
func (c *Conn) cancelTask(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskCancelWait)
	defer cancel()
	if _, err := c.taskRequest(ctx, "tasks/cancel", id); err != nil {
		c.log.Warn("mcp tasks/cancel failed", "server", c.cfg.target(), "task", id, "error", err)
	}
}

// taskRequest sends a tasks/* request about task id as a sessionless 2026-07-28
// request and returns its result.
func (c *Conn) taskRequest(ctx context.Context, method, id string) (json.RawMessage, error) {
	reqID := c.nextToken.Add(1)
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": reqID, "method": method,
		"params": map[string]any{"taskId": id, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    protocolModern,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": Name, "version": Version},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}},
		}},
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", protocolModern)
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", id) // the tasks extension routes by the task id
	if err := c.setOAuthToken(ctx, req); err != nil {
		return nil, err
	}
	resp, err := c.httpc.Do(req)
	if err != nil {
		return nil, &momentaryError{err}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return nil, &momentaryError{fmt.Errorf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return nil, fmt.Errorf("the answer to %s is larger than maxResponseBytes=%d bytes", method, c.cfg.MaxResponseBytes)
	}
	res, err := rpcResult(resp.Header.Get("Content-Type"), data)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 || res == nil {
		return nil, fmt.Errorf("HTTP %s", strconv.Itoa(resp.StatusCode)+" "+http.StatusText(resp.StatusCode))
	}
	return res, nil
}

// journaledCall is a tools/call's outcome as the journal of a durable run keeps
// it: the task the server runs the call as, or the result it answered with.
type journaledCall struct {
	TaskID         string              `json:"taskId,omitempty"`
	PollIntervalMs int64               `json:"pollIntervalMs,omitempty"`
	Result         *sdk.CallToolResult `json:"result,omitempty"`
}

// journaledCall makes the call with outcome as an entry of the durable run's
// journal j: the entry is recorded before the task is polled, so a run resumed
// after a crash gets the same task back (and polls it) or the same result,
// instead of calling the tool again.
func (c *Conn) journaledCall(ctx context.Context, j durable.Journal, name string,
	outcome func(context.Context) (*sdk.CallToolResult, *task, error)) (*sdk.CallToolResult, *task, error) {
	raw, err := j.Do(ctx, "tools/call "+name, func(ctx context.Context) (json.RawMessage, error) {
		res, tk, err := outcome(ctx)
		if err != nil {
			return nil, err
		}
		jc := journaledCall{Result: res}
		if tk != nil {
			jc = journaledCall{TaskID: tk.TaskID, PollIntervalMs: tk.PollIntervalMs}
		}
		return json.Marshal(jc)
	})
	if err != nil {
		return nil, nil, err
	}
	var jc journaledCall
	if err := json.Unmarshal(raw, &jc); err != nil || (jc.TaskID == "" && jc.Result == nil) {
		return nil, nil, fmt.Errorf("call %s on %s: the durable run's journal holds no outcome of this call (%s); the workflow may have changed under the run", name, c.cfg.target(), raw)
	}
	if jc.TaskID != "" {
		return nil, &task{TaskID: jc.TaskID, Status: "working", PollIntervalMs: jc.PollIntervalMs}, nil
	}
	return jc.Result, nil, nil
}
