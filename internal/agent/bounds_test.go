package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/agent/openai"
	"github.com/arvenza/helix/internal/tool"
)

// openAIModel is a model talking to a fake Chat Completions server.
func openAIModel(t *testing.T, srv *agenttest.Server) agent.Model {
	t.Helper()
	m, err := openai.New(openai.Config{Model: "gpt-test", APIKey: "k", BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// counted is a tool that counts its calls and answers "ok".
func counted(id string, n *atomic.Int32) *tool.Tool {
	return &tool.Tool{ID: id, Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
		n.Add(1)
		return tool.TextResult("ok"), nil
	}}
}

// A model (over the OpenAI wire format) that asks for 50 tool calls in one turn
// gets the first max_tool_calls_per_turn (default 16) run; every other call gets
// an error result that names the limit, so the model can ask again in smaller
// turns. The provider still gets a result for each of its 50 call ids.
func TestToolCallsPerTurnAreBounded(t *testing.T) {
	var ran atomic.Int32
	var results []agenttest.ToolResult
	srv := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
		if r.N == 1 {
			cs := make([]agenttest.Call, 50)
			for i := range cs {
				cs[i] = agenttest.Call{ID: fmt.Sprintf("c%d", i), Name: "ping", Args: `{}`}
			}
			return agenttest.Reply{Calls: cs}
		}
		results = r.ToolResults
		return agenttest.Reply{Text: "done"}
	})
	a := mustNew(t, agent.Config{ID: "greedy"}, openAIModel(t, srv), testTools(t, counted("ping", &ran)))
	res, err := a.Run(context.Background(), agent.Request{Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if ran.Load() != agent.DefaultMaxToolCallsPerTurn || res.ToolCalls != agent.DefaultMaxToolCallsPerTurn {
		t.Fatalf("the tool ran %d times (result says %d), want %d", ran.Load(), res.ToolCalls, agent.DefaultMaxToolCallsPerTurn)
	}
	if len(results) != 50 {
		t.Fatalf("the model got %d tool results, want 50", len(results))
	}
	for i, r := range results {
		refused := strings.Contains(r.Text, "max_tool_calls_per_turn (16)")
		if (i >= agent.DefaultMaxToolCallsPerTurn) != refused || r.CallID != fmt.Sprintf("c%d", i) {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
}

// The limit is configurable, and a model that keeps asking for too many calls
// still ends within max_iterations.
func TestToolCallsPerTurnConfigured(t *testing.T) {
	var ran atomic.Int32
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		cs := make([]agent.ToolCall, 5)
		for i := range cs {
			cs[i] = call(fmt.Sprint(i), "ping", `{}`)
		}
		return calls(cs...), nil
	})
	a := mustNew(t, agent.Config{ID: "g", MaxToolCallsPerTurn: 2, MaxIterations: 3}, m, testTools(t, counted("ping", &ran)))
	_, err := a.Run(context.Background(), agent.Request{Message: "go"})
	if err == nil || !strings.Contains(err.Error(), "max_iterations (3)") || ran.Load() != 6 {
		t.Fatalf("err = %v, ran %d times, want the iteration limit after 6 calls", err, ran.Load())
	}
	if _, err := agent.New(agent.Config{ID: "n", MaxToolCallsPerTurn: -1}, m, nil); err == nil {
		t.Fatal("a negative max_tool_calls_per_turn was accepted")
	}
}

// At most MaxParallelToolCalls calls of one turn run at the same time (default
// 4), however many the model asks for.
func TestToolConcurrencyIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{{"default", 0, agent.DefaultMaxParallelToolCalls}, {"configured", 3, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			var inFlight, most atomic.Int32
			var mu sync.Mutex
			probe := &tool.Tool{ID: "probe", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
				v := inFlight.Add(1)
				mu.Lock()
				most.Store(max(most.Load(), v))
				mu.Unlock()
				// Give the others time to start: enough for the bound to be reached.
				deadline := time.Now().Add(2 * time.Second)
				for inFlight.Load() < int32(tc.want) && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(5 * time.Millisecond)
				inFlight.Add(-1)
				return tool.TextResult("ok"), nil
			}}
			m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
				if len(req.Messages) == 1 {
					cs := make([]agent.ToolCall, 12)
					for i := range cs {
						cs[i] = call(fmt.Sprint(i), "probe", `{}`)
					}
					return calls(cs...), nil
				}
				return answer("done"), nil
			})
			a := mustNew(t, agent.Config{ID: "c", MaxParallelToolCalls: tc.limit}, m, testTools(t, probe))
			res, err := a.Run(context.Background(), agent.Request{Message: "go"})
			if err != nil {
				t.Fatal(err)
			}
			if most.Load() != int32(tc.want) || res.ToolCalls != 12 {
				t.Fatalf("at most %d calls ran at once (want %d); %d calls", most.Load(), tc.want, res.ToolCalls)
			}
		})
	}
}

// Tool arguments and results are bounded in bytes (MaxToolBytes, default 1 MiB):
// an oversize call is not run and an oversize result is not passed on; the model
// is told which, how big and what the limit is, and the run goes on.
func TestOversizeToolArgumentsAndResults(t *testing.T) {
	var echoed atomic.Int32
	echo := &tool.Tool{ID: "echo", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
		echoed.Add(1)
		return tool.TextResult(fmt.Sprint(args["text"])), nil
	}}
	huge := &tool.Tool{ID: "huge", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
		return tool.TextResult(strings.Repeat("r", 2<<20)), nil
	}}
	for _, tc := range []struct {
		name   string
		limit  int64
		shown  string
		bigArg int
	}{{"default", 0, "1048576", 2 << 20}, {"configured", 1000, "1000", 5000}} {
		t.Run(tc.name, func(t *testing.T) {
			echoed.Store(0)
			bigArgs, _ := json.Marshal(map[string]any{"text": strings.Repeat("a", tc.bigArg)})
			var results []agent.Message
			m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
				if len(req.Messages) == 1 {
					return calls(call("1", "echo", string(bigArgs)), call("2", "huge", `{}`), call("3", "echo", `{"text":"small"}`)), nil
				}
				results = req.Messages[2:]
				return answer("done"), nil
			})
			a := mustNew(t, agent.Config{ID: "b", MaxToolBytes: tc.limit}, m, testTools(t, echo, huge))
			res, err := a.Run(context.Background(), agent.Request{Message: "go"})
			if err != nil || res.Text != "done" {
				t.Fatalf("run: %v %+v", err, res)
			}
			if len(results) != 3 {
				t.Fatalf("results = %d", len(results))
			}
			args, out, small := results[0], results[1], results[2]
			if !args.IsError || !strings.Contains(args.Text, fmt.Sprintf("arguments of tool echo are %d bytes", len(bigArgs))) ||
				!strings.Contains(args.Text, "max_tool_bytes ("+tc.shown+")") || len(args.Text) > 1000 {
				t.Errorf("oversize arguments: %.300q", args.Text)
			}
			if !out.IsError || !strings.Contains(out.Text, fmt.Sprintf("result of tool huge is %d bytes", 2<<20)) ||
				!strings.Contains(out.Text, "max_tool_bytes ("+tc.shown+")") || len(out.Text) > 1000 {
				t.Errorf("oversize result: %.300q", out.Text)
			}
			if small.IsError || small.Text != "small" || echoed.Load() != 1 {
				t.Errorf("small call: %+v, echo ran %d times", small, echoed.Load())
			}
		})
	}
	if _, err := agent.New(agent.Config{ID: "n", MaxToolBytes: -1}, agenttest.Script(), nil); err == nil {
		t.Fatal("a negative max_tool_bytes was accepted")
	}
}

// Errors that quote what the model or a tool sent quote a short excerpt: a
// made-up tool name, a tool's error and an answer that misses the output schema
// do not come back (to the model, the caller or the logs) at full length.
func TestErrorsQuoteAnExcerpt(t *testing.T) {
	long := strings.Repeat("n", 10000)
	t.Run("UnknownTool", func(t *testing.T) {
		var result agent.Message
		m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
			if len(req.Messages) == 1 {
				return calls(call("1", long, `{}`)), nil
			}
			result = req.Messages[2]
			return answer("ok"), nil
		})
		a := mustNew(t, agent.Config{ID: "u"}, m, testTools(t))
		if _, err := a.Run(context.Background(), agent.Request{Message: "go"}); err != nil {
			t.Fatal(err)
		}
		if !result.IsError || !strings.Contains(result.Text, "unknown tool") || len(result.Text) > 500 {
			t.Fatalf("%d bytes: %.300q", len(result.Text), result.Text)
		}
	})
	t.Run("RepeatedFailure", func(t *testing.T) {
		loud := &tool.Tool{ID: "loud", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
			return tool.ErrorResult("failed: " + long), nil
		}}
		m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
			return calls(call("1", "loud", `{}`)), nil
		})
		a := mustNew(t, agent.Config{ID: "r"}, m, testTools(t, loud))
		_, err := a.Run(context.Background(), agent.Request{Message: "go"})
		if err == nil || !strings.Contains(err.Error(), "failed 3 times") || len(err.Error()) > 500 {
			t.Fatalf("%v", err)
		}
	})
	t.Run("OutputSchema", func(t *testing.T) {
		var repair string
		m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
			if last := req.Messages[len(req.Messages)-1]; len(req.Messages) > 2 {
				repair = last.Text
			}
			return answer(`{"n": "` + long + `"}`), nil
		})
		a := mustNew(t, agent.Config{ID: "s"}, m, nil)
		_, err := a.Run(context.Background(), agent.Request{Message: "go",
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)})
		if err == nil || !strings.Contains(err.Error(), "output schema") || len(err.Error()) > 1000 {
			t.Fatalf("%d bytes: %.300v", len(fmt.Sprint(err)), err)
		}
		if repair == "" || len(repair) > 1000 {
			t.Fatalf("repair prompt of %d bytes: %.300q", len(repair), repair)
		}
	})
}

// A tool's error that quotes the model's arguments (an input schema's
// validation error quotes the value) reaches the model as an excerpt.
func TestToolValidationErrorIsAnExcerpt(t *testing.T) {
	var result agent.Message
	long := strings.Repeat("v", 20000)
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		if len(req.Messages) == 1 {
			return calls(call("1", "add", `{"a":"`+long+`","b":1}`)), nil
		}
		result = req.Messages[2]
		return answer("ok"), nil
	})
	a := mustNew(t, agent.Config{ID: "v"}, m, testTools(t))
	if _, err := a.Run(context.Background(), agent.Request{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if !result.IsError || !strings.Contains(result.Text, "invalid arguments for tool add") || len(result.Text) > 5000 {
		t.Fatalf("%d bytes: %.300q", len(result.Text), result.Text)
	}
}
