package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/console/agents"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/tool"
)

func weatherTools(t *testing.T) *tool.Set {
	t.Helper()
	set, err := tool.NewSet([]*tool.Tool{{ID: "weather", Description: "the weather of a city",
		Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
			if args["city"] == "Atlantis" {
				return tool.Result{}, errors.New("no such city")
			}
			return tool.TextResult(fmt.Sprintf("sunny in %v", args["city"])), nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// A run through the agent loop with the recorder as its observer is recorded
// turn by turn: the calls with their arguments, each result, tokens, the answer.
func TestRecorderRecordsARunThroughTheLoop(t *testing.T) {
	t.Parallel()
	model := agenttest.Script(
		&agent.ModelResponse{Message: agent.Message{ToolCalls: []agent.ToolCall{
			{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "c2", Name: "weather", Arguments: json.RawMessage(`{"city":"Atlantis"}`)}}},
			Usage: agent.Usage{InputTokens: 11, OutputTokens: 3}, StopReason: "tool_calls"},
		&agent.ModelResponse{Message: agent.Message{Text: "Paris is sunny."}, Usage: agent.Usage{InputTokens: 20, OutputTokens: 4}, StopReason: "stop"})
	a, err := agent.New(agent.Config{ID: "helper"}, model, weatherTools(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := agents.NewRecorder(agents.Limits{})
	ctx := agent.WithObserver(context.Background(), rec)
	if _, err := a.Run(ctx, agent.Request{Message: "weather?", Owner: agent.SessionOwner{Server: "tools", Principal: "alice"}}); err != nil {
		t.Fatal(err)
	}
	runs := rec.Runs()
	if len(runs) != 1 {
		t.Fatalf("runs = %d", len(runs))
	}
	r := runs[0]
	if r.Agent != "helper" || r.Input != "weather?" || r.Principal != "alice" || r.Answer != "Paris is sunny." || r.State() != "done" {
		t.Fatalf("run = %+v", r)
	}
	if r.Usage.InputTokens != 31 || r.Usage.OutputTokens != 7 || r.Iterations != 2 || r.ToolCalls != 2 {
		t.Fatalf("totals = %+v %d %d", r.Usage, r.Iterations, r.ToolCalls)
	}
	var kinds []string
	for _, e := range r.Entries {
		kinds = append(kinds, string(e.Kind))
	}
	if got := strings.Join(kinds, ","); got != "turn,tool,tool,turn" {
		t.Fatalf("entries = %s", got)
	}
	turn := r.Entries[0]
	if len(turn.Calls) != 2 || turn.Calls[0].Arguments != `{"city":"Paris"}` || turn.StopReason != "tool_calls" || turn.Usage.InputTokens != 11 || turn.Iteration != 1 {
		t.Fatalf("turn = %+v", turn)
	}
	results := map[string]agents.Entry{}
	for _, e := range r.Entries[1:3] {
		results[e.CallID] = e
	}
	if results["c1"].Text != "sunny in Paris" || results["c1"].IsError || !results["c2"].IsError || !strings.Contains(results["c2"].Text, "no such city") {
		t.Fatalf("results = %+v", results)
	}
	if got, ok := rec.Run(r.ID); !ok || got != r {
		t.Fatalf("Run(%s) = %v %v", r.ID, got, ok)
	}
}

// A failing model call ends the run failed, with the error in the turn and in
// the run.
func TestRecorderRecordsAFailedRun(t *testing.T) {
	t.Parallel()
	model := agenttest.ModelFunc(func(context.Context, *agent.ModelRequest) (*agent.ModelResponse, error) {
		return nil, &agent.ProviderError{Provider: "openai", StatusCode: 400, Message: "model gpt-x does not exist"}
	})
	a, _ := agent.New(agent.Config{ID: "broken", MaxRetries: -1}, model, nil)
	rec := agents.NewRecorder(agents.Limits{})
	if _, err := a.Run(agent.WithObserver(context.Background(), rec), agent.Request{Message: "hi"}); err == nil {
		t.Fatal("no error")
	}
	r := rec.Runs()[0]
	if r.State() != "failed" || !strings.Contains(r.Err, "gpt-x does not exist") || len(r.Entries) != 1 || !strings.Contains(r.Entries[0].Err, "gpt-x") {
		t.Fatalf("run = %+v", r)
	}
}

// Without an observer in the context nothing is recorded.
func TestRecorderSeesOnlyObservedRuns(t *testing.T) {
	t.Parallel()
	a, _ := agent.New(agent.Config{ID: "quiet"}, agenttest.Script(&agent.ModelResponse{Message: agent.Message{Text: "ok"}}), nil)
	rec := agents.NewRecorder(agents.Limits{})
	if _, err := a.Run(context.Background(), agent.Request{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Runs()); n != 0 {
		t.Fatalf("runs = %d", n)
	}
}

func fakeRun(rec *agents.Recorder, input string, turns int, text string) {
	o := rec.StartRun(context.Background(), agent.RunStart{Agent: "a", Input: input, Started: time.Now()})
	for i := 1; i <= turns; i++ {
		o.ModelTurn(agent.TurnEvent{Iteration: i, Text: text, ToolCalls: []agent.ToolCall{{ID: "c", Name: "t", Arguments: json.RawMessage(`{}`)}}})
		o.ToolResult(agent.ToolEvent{CallID: "c", Name: "t", Text: text})
	}
	o.End(agent.RunEnd{Result: &agent.Result{Text: text}})
}

// The ring keeps the last MaxRuns runs and at most MaxBytes; one run keeps at
// most MaxEntries entries and counts the rest; long texts are cut, saying so.
func TestRecorderBounds(t *testing.T) {
	t.Parallel()
	rec := agents.NewRecorder(agents.Limits{MaxRuns: 5, MaxBytes: 64 << 10, MaxText: 100, MaxEntries: 6})
	for i := range 20 {
		fakeRun(rec, fmt.Sprint("run ", i), 1, "x")
	}
	runs := rec.Runs()
	if len(runs) != 5 || runs[0].Input != "run 19" || runs[4].Input != "run 15" || rec.Evicted() != 15 {
		t.Fatalf("runs = %d, newest %q, oldest %q, evicted %d", len(runs), runs[0].Input, runs[4].Input, rec.Evicted())
	}
	fakeRun(rec, "long", 10, strings.Repeat("é", 5000))
	r := rec.Runs()[0]
	if len(r.Entries) != 6 || r.Omitted != 14 {
		t.Fatalf("entries = %d, omitted %d", len(r.Entries), r.Omitted)
	}
	if txt := r.Entries[0].Text; len(txt) > 140 || !strings.Contains(txt, "(10000 bytes, cut)") || !strings.HasPrefix(txt, "éé") {
		t.Fatalf("text = %q", txt)
	}
	// Bytes: runs with big texts push the older ones out.
	rec = agents.NewRecorder(agents.Limits{MaxRuns: 1000, MaxBytes: 20 << 10, MaxText: 1 << 10})
	for range 100 {
		fakeRun(rec, "big", 2, strings.Repeat("y", 4<<10))
	}
	if b := rec.Bytes(); b > 20<<10 {
		t.Fatalf("bytes = %d > budget", b)
	}
	if n := len(rec.Runs()); n == 0 || n >= 100 {
		t.Fatalf("runs kept = %d", n)
	}
}

// Secrets of the configuration and credentials in URLs never reach a
// transcript.
func TestRecorderRedacts(t *testing.T) {
	t.Parallel()
	secret := "sk-recorder-test-7f3a9c"
	redact.AddSecret(secret)
	rec := agents.NewRecorder(agents.Limits{})
	o := rec.StartRun(context.Background(), agent.RunStart{Agent: "a", Input: "my key is " + secret, Started: time.Now()})
	o.ModelTurn(agent.TurnEvent{Iteration: 1, ToolCalls: []agent.ToolCall{{ID: "c", Name: "fetch", Arguments: json.RawMessage(`{"url":"https://api.example/x?token=` + secret + `"}`)}}})
	o.ToolResult(agent.ToolEvent{CallID: "c", Name: "fetch", Text: "echo " + secret})
	o.End(agent.RunEnd{Result: &agent.Result{Text: "done " + secret}, Err: errors.New("failed with " + secret)})
	b, _ := json.Marshal(rec.Runs())
	if strings.Contains(string(b), secret) {
		t.Fatalf("secret in the transcript: %s", b)
	}
	if !strings.Contains(string(b), "[redacted]") {
		t.Fatalf("no redaction mark: %s", b)
	}
}

// Many runs recording at once while pages read: snapshots read never change
// (checked by -race and by the entries' count staying put).
func TestRecorderConcurrentWritersAndReaders(t *testing.T) {
	t.Parallel()
	rec := agents.NewRecorder(agents.Limits{MaxRuns: 20, MaxBytes: 256 << 10})
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, r := range rec.Runs() {
					n := len(r.Entries)
					_ = r.State()
					for _, e := range r.Entries {
						_ = e.Text
					}
					if len(r.Entries) != n {
						t.Error("a snapshot changed")
					}
				}
			}
		})
	}
	var writers sync.WaitGroup
	for w := range 8 {
		writers.Go(func() {
			for i := range 50 {
				fakeRun(rec, fmt.Sprint(w, "/", i), 3, "text")
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if n := len(rec.Runs()); n != 20 {
		t.Fatalf("runs = %d", n)
	}
	for _, r := range rec.Runs() {
		if r.Running() || len(r.Entries) != 6 {
			t.Fatalf("run %s: %s, %d entries", r.ID, r.State(), len(r.Entries))
		}
	}
}

// The console's tracer puts the recorder in the context of exchanges only
// when the application has agents; without agents it hands the context back
// as it was.
func TestTracerAddsTheObserverOnlyWithAgents(t *testing.T) {
	t.Parallel()
	rec := agents.NewRecorder(agents.Limits{})
	a, _ := agent.New(agent.Config{ID: "x"}, agenttest.Script(&agent.ModelResponse{Message: agent.Message{Text: "ok"}},
		&agent.ModelResponse{Message: agent.Message{Text: "ok"}}), nil)
	type key struct{}
	base := context.WithValue(context.Background(), key{}, 1)

	ctx, end := agents.Tracer(rec, func() bool { return false }).StartExchange(base, "workflow", "w", "", nil)
	end(nil)
	if ctx != base {
		t.Fatal("the context changed in an application without agents")
	}
	if _, err := a.Run(ctx, agent.Request{Message: "hi"}); err != nil || len(rec.Runs()) != 0 {
		t.Fatalf("recorded without agents: %v %d", err, len(rec.Runs()))
	}
	ctx, end = agents.Tracer(rec, func() bool { return true }).StartExchange(base, "agent", "x", "", nil)
	defer end(nil)
	if _, err := a.Run(ctx, agent.Request{Message: "hi"}); err != nil || len(rec.Runs()) != 1 {
		t.Fatalf("not recorded: %v %d", err, len(rec.Runs()))
	}
}

// A run that panics (a tool's bug; the engine recovers it) still ends in the
// transcript, failed, instead of staying "running".
func TestRecorderEndsAPanickingRun(t *testing.T) {
	t.Parallel()
	model := agenttest.ModelFunc(func(context.Context, *agent.ModelRequest) (*agent.ModelResponse, error) { panic("boom") })
	a, _ := agent.New(agent.Config{ID: "buggy"}, model, nil)
	rec := agents.NewRecorder(agents.Limits{})
	func() {
		defer func() { _ = recover() }()
		_, _ = a.Run(agent.WithObserver(context.Background(), rec), agent.Request{Message: "hi"})
	}()
	if r := rec.Runs()[0]; r.State() != "failed" || !strings.Contains(r.Err, "panicked") {
		t.Fatalf("run = %s %q", r.State(), r.Err)
	}
}
