package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/internal/tool"
)

func TestRunCountsAndReports(t *testing.T) {
	var seen []*agent.ModelRequest
	m := agenttest.Script(calls(call("1", "add", `{"a":1,"b":2}`)), answer("three"))
	spy := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		cp := *req
		cp.Messages = append([]agent.Message(nil), req.Messages...)
		seen = append(seen, &cp)
		return m.Generate(ctx, req)
	})
	a := mustNew(t, agent.Config{ID: "calc", SystemPrompt: "be brief"}, spy, testTools(t))
	rec := &recorder{}
	res, err := a.Run(report.WithReporter(context.Background(), rec), agent.Request{Message: "1+2?"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "three" || res.Iterations != 2 || res.ToolCalls != 1 || res.Usage != (agent.Usage{InputTokens: 30, OutputTokens: 12}) {
		t.Fatalf("result = %+v", res)
	}
	if seen[0].System != "be brief" || len(seen[0].Tools) != 3 || seen[0].Tools[0].Name != "add" || !seen[0].ParallelToolCalls {
		t.Fatalf("first request = %+v", seen[0])
	}
	last := seen[1].Messages[len(seen[1].Messages)-1]
	if last.Role != agent.RoleTool || last.ToolCallID != "1" || last.Text != "3" || last.IsError {
		t.Fatalf("tool result = %+v", last)
	}
	got := rec.all()
	for _, want := range []string{"0.5/10 agent calc: iteration 1: thinking", "0.6666666666666666/10 agent calc: iteration 1: calling add", "1.5/10 agent calc: iteration 2: thinking", `"iterations":2`} {
		if !strings.Contains(got, want) {
			t.Errorf("reports lack %q:\n%s", want, got)
		}
	}
}

func TestMaxIterations(t *testing.T) {
	loop := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		return calls(call("x", "add", `{"a":1,"b":`+string(rune('0'+len(req.Messages)%10))+`}`)), nil
	})
	a := mustNew(t, agent.Config{ID: "loopy", MaxIterations: 3}, loop, testTools(t))
	res, err := a.Run(context.Background(), agent.Request{Message: "go"})
	var me *agent.MaxIterationsError
	if !errors.As(err, &me) || me.Limit != 3 || !strings.Contains(err.Error(), "max_iterations (3)") {
		t.Fatalf("err = %v", err)
	}
	if res.Iterations != 3 || res.ToolCalls != 3 {
		t.Fatalf("result = %+v", res)
	}
}

// Failures of a tool call are results the model sees, in the model's order.
func TestToolFailuresAreResults(t *testing.T) {
	var results []agent.Message
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		if len(req.Messages) == 1 {
			return calls(call("a", "nope", `{}`), call("b", "add", `{"a":"x"}`), call("c", "fail", `{}`), call("d", "add", `not json`), call("e", "add", `{"a":2,"b":2}`)), nil
		}
		results = req.Messages[2:]
		return answer("ok"), nil
	})
	a := mustNew(t, agent.Config{ID: "f"}, m, testTools(t))
	if _, err := a.Run(context.Background(), agent.Request{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, text string
		isErr    bool
	}{
		{"a", `unknown tool "nope"; available tools: add, fail, wait`, true},
		{"b", "invalid arguments for tool add", true},
		{"c", "disk on fire", true},
		{"d", "", true},
		{"e", "4", false},
	}
	if len(results) != len(want) {
		t.Fatalf("results = %+v", results)
	}
	for i, w := range want {
		r := results[i]
		if r.ToolCallID != w.id || r.IsError != w.isErr || !strings.Contains(r.Text, w.text) {
			t.Errorf("result %d = %+v, want id %s containing %q (error %v)", i, r, w.id, w.text, w.isErr)
		}
	}
}

func TestRepeatedFailureStops(t *testing.T) {
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		return calls(call("1", "fail", `{}`)), nil
	})
	a := mustNew(t, agent.Config{ID: "stubborn"}, m, testTools(t))
	res, err := a.Run(context.Background(), agent.Request{Message: "go"})
	if err == nil || !strings.Contains(err.Error(), "tool fail failed 3 times with the same arguments: disk on fire") {
		t.Fatalf("err = %v", err)
	}
	if res.Iterations != 3 {
		t.Fatalf("iterations = %d", res.Iterations)
	}
}

// The calls of one turn run at the same time: each of two tools waits for the other
// to start.
func TestParallelToolCalls(t *testing.T) {
	both := make(chan struct{})
	var n atomic.Int32
	meet := &tool.Tool{ID: "meet", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
		if n.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
		case <-ctx.Done():
			return tool.Result{}, errors.New("the other call never started")
		}
		return tool.TextResult(args["who"].(string)), nil
	}}
	var results []agent.Message
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		if len(req.Messages) == 1 {
			return calls(call("1", "meet", `{"who":"first"}`), call("2", "meet", `{"who":"second"}`)), nil
		}
		results = req.Messages[2:]
		return answer("done"), nil
	})
	a := mustNew(t, agent.Config{ID: "p", ToolTimeout: 10 * time.Second}, m, testTools(t, meet))
	if _, err := a.Run(context.Background(), agent.Request{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Text != "first" || results[1].Text != "second" || results[0].IsError || results[1].IsError {
		t.Fatalf("results = %+v", results)
	}
}

// With parallel tool calls off the model is told so and calls run one by one.
func TestSequentialToolCalls(t *testing.T) {
	var inFlight, most atomic.Int32
	probe := &tool.Tool{ID: "probe", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
		if v := inFlight.Add(1); v > most.Load() {
			most.Store(v)
		}
		defer inFlight.Add(-1)
		return tool.TextResult("ok"), nil
	}}
	var parallel []bool
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		parallel = append(parallel, req.ParallelToolCalls)
		if len(req.Messages) == 1 {
			return calls(call("1", "probe", `{}`), call("2", "probe", `{}`), call("3", "probe", `{}`)), nil
		}
		return answer("done"), nil
	})
	off := false
	a := mustNew(t, agent.Config{ID: "s", ParallelToolCalls: &off}, m, testTools(t, probe))
	res, err := a.Run(context.Background(), agent.Request{Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if most.Load() != 1 || res.ToolCalls != 3 || parallel[0] {
		t.Fatalf("most in flight %d, tool calls %d, parallel %v", most.Load(), res.ToolCalls, parallel)
	}
}

func TestToolTimeout(t *testing.T) {
	var result agent.Message
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		if len(req.Messages) == 1 {
			return calls(call("1", "wait", `{}`)), nil
		}
		result = req.Messages[2]
		return answer("gave up on it"), nil
	})
	a := mustNew(t, agent.Config{ID: "t", ToolTimeout: 20 * time.Millisecond}, m, testTools(t))
	res, err := a.Run(context.Background(), agent.Request{Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if !result.IsError || !strings.Contains(result.Text, "timeout 20ms exceeded") || res.Text != "gave up on it" {
		t.Fatalf("tool result = %+v", result)
	}
}

// Cancelling the run stops the tools in flight and the run returns the cause.
func TestCancelStopsTools(t *testing.T) {
	inTool := make(chan struct{})
	var stopped atomic.Bool
	hold := &tool.Tool{ID: "hold", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
		close(inTool)
		<-ctx.Done()
		stopped.Store(true)
		return tool.Result{}, ctx.Err()
	}}
	m := agenttest.Script(calls(call("1", "hold", `{}`)))
	a := mustNew(t, agent.Config{ID: "c"}, m, testTools(t, hold))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-inTool; cancel() }()
	_, err := a.Run(ctx, agent.Request{Message: "go"})
	if !errors.Is(err, context.Canceled) || !stopped.Load() {
		t.Fatalf("err = %v, tool stopped %v", err, stopped.Load())
	}
}

func TestRunTimeout(t *testing.T) {
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	})
	a := mustNew(t, agent.Config{ID: "slow", Timeout: 20 * time.Millisecond}, m, nil)
	_, err := a.Run(context.Background(), agent.Request{Message: "go"})
	if err == nil || err.Error() != `agent "slow": timeout 20ms exceeded` {
		t.Fatalf("err = %v", err)
	}
}

// 429 and 5xx are retried (Retry-After honoured, else backoff); 4xx are not.
func TestRetries(t *testing.T) {
	errs := []error{
		&agent.ProviderError{Provider: "fake", StatusCode: 429, Message: "slow down", RetryAfter: time.Millisecond},
		&agent.ProviderError{Provider: "fake", StatusCode: 503, Message: "busy"},
	}
	var attempts int
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		attempts++
		if attempts <= len(errs) {
			return nil, errs[attempts-1]
		}
		return answer("finally"), nil
	})
	rec := &recorder{}
	a := mustNew(t, agent.Config{ID: "r", RetryBackoff: time.Millisecond}, m, nil)
	res, err := a.Run(report.WithReporter(context.Background(), rec), agent.Request{Message: "go"})
	if err != nil || res.Text != "finally" || attempts != 3 || res.Iterations != 1 {
		t.Fatalf("res %+v, err %v, attempts %d", res, err, attempts)
	}
	if !strings.Contains(rec.all(), "retrying") {
		t.Errorf("retries not logged:\n%s", rec.all())
	}

	attempts = 0
	bad := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		attempts++
		return nil, &agent.ProviderError{Provider: "fake", StatusCode: 400, Message: "model not found"}
	})
	a = mustNew(t, agent.Config{ID: "r", RetryBackoff: time.Millisecond}, bad, nil)
	_, err = a.Run(context.Background(), agent.Request{Message: "go"})
	if err == nil || err.Error() != `agent "r": fake: status 400: model not found` || attempts != 1 {
		t.Fatalf("err = %v after %d attempts", err, attempts)
	}

	attempts = 0
	down := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		attempts++
		return nil, &agent.ProviderError{Provider: "fake", StatusCode: 500, Message: "down"}
	})
	a = mustNew(t, agent.Config{ID: "r", RetryBackoff: time.Millisecond, MaxRetries: 2}, down, nil)
	if _, err = a.Run(context.Background(), agent.Request{Message: "go"}); err == nil || attempts != 3 {
		t.Fatalf("err = %v after %d attempts", err, attempts)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    map[string]string
		want time.Duration
	}{
		{map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "7"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": now.Add(3 * time.Second).Format(time.RFC1123)}, 3 * time.Second},
		{map[string]string{"Retry-After": "soon"}, 0},
		{nil, 0},
	} {
		if got := agent.ParseRetryAfter(func(k string) string { return tc.h[k] }, now); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestStructuredOutput(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"lang":{"type":"string"}},"required":["lang"]}`)
	var sent json.RawMessage
	m := agenttest.Script(answer(`{"language":"fr"}`), answer("```json\n{\"lang\":\"fr\"}\n```"))
	spy := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		sent = req.OutputSchema
		return m.Generate(ctx, req)
	})
	a := mustNew(t, agent.Config{ID: "s"}, spy, nil)
	res, err := a.Run(context.Background(), agent.Request{Message: "which language?", OutputSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Structured.(map[string]any); got["lang"] != "fr" || res.Text != `{"lang":"fr"}` || res.Iterations != 2 || string(sent) != string(schema) {
		t.Fatalf("result = %+v", res)
	}

	a = mustNew(t, agent.Config{ID: "s"}, agenttest.Script(answer("no idea"), answer(`{"lang":1}`)), nil)
	_, err = a.Run(context.Background(), agent.Request{Message: "which language?", OutputSchema: schema})
	if err == nil || !strings.Contains(err.Error(), "does not match the output schema after a repair attempt") {
		t.Fatalf("err = %v", err)
	}
}

func TestMemory(t *testing.T) {
	var lastLen int
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		lastLen = len(req.Messages)
		if req.Messages[len(req.Messages)-1].Role == agent.RoleUser && req.Messages[len(req.Messages)-1].Text == "tool please" {
			return calls(call("1", "add", `{"a":1,"b":1}`)), nil
		}
		return answer("ok"), nil
	})
	a := mustNew(t, agent.Config{ID: "m", MemoryWindow: 4, MaxSessions: 2}, m, testTools(t))
	run := func(session, msg string) int {
		t.Helper()
		if _, err := a.Run(context.Background(), agent.Request{Message: msg, SessionID: session}); err != nil {
			t.Fatal(err)
		}
		return lastLen
	}
	if n := run("", "hi"); n != 1 {
		t.Fatalf("stateless run saw %d messages", n)
	}
	if n := run("", "hi"); n != 1 {
		t.Fatalf("stateless run saw %d messages", n)
	}
	run("a", "one") // a: user, assistant
	if n := run("a", "two"); n != 3 {
		t.Fatalf("second turn saw %d messages, want 3", n)
	}
	// a holds 4 now; the window keeps 4, so the third turn sees 4 + 1.
	if n := run("a", "three"); n != 5 {
		t.Fatalf("third turn saw %d messages, want 5", n)
	}
	// A tool turn (user, call, result, answer) trimmed to 4 starts at its user message.
	run("a", "tool please")
	if n := run("a", "after"); n != 5 {
		t.Fatalf("after a tool turn saw %d messages, want 5", n)
	}
	// Two more sessions evict a, the least recently used.
	run("b", "x")
	run("c", "x")
	if n := run("a", "back"); n != 1 {
		t.Fatalf("evicted session saw %d messages, want 1", n)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := agent.New(agent.Config{ID: "x"}, nil, nil); err == nil {
		t.Fatal("no model accepted")
	}
	if _, err := agent.New(agent.Config{ID: "x", MaxIterations: -1}, agenttest.Script(), nil); err == nil {
		t.Fatal("negative max_iterations accepted")
	}
}
