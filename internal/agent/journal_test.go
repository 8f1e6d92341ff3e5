package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/tool"
)

// memJournal is a durable.Journal in memory, with the contract's rules: entries
// are matched in the order they are asked for, and a name that differs from the
// recorded one is an error.
type memJournal struct {
	mu      sync.Mutex
	entries []journalEntry
	pos     int
}

type journalEntry struct {
	name string
	raw  json.RawMessage
	err  string
}

func (j *memJournal) Do(ctx context.Context, name string, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	j.mu.Lock()
	i := j.pos
	j.pos++
	if i < len(j.entries) {
		e := j.entries[i]
		j.mu.Unlock()
		if e.name != name {
			return nil, fmt.Errorf("entry %d is %q, the run asks for %q: the workflow changed", i, e.name, name)
		}
		if e.err != "" {
			return nil, errors.New(e.err)
		}
		return e.raw, nil
	}
	j.mu.Unlock()
	raw, err := fn(ctx)
	e := journalEntry{name: name, raw: raw}
	if err != nil {
		e.err = err.Error()
	}
	j.mu.Lock()
	if i != len(j.entries) {
		j.mu.Unlock()
		return nil, fmt.Errorf("entry %d recorded out of order", i)
	}
	j.entries = append(j.entries, e)
	j.mu.Unlock()
	return raw, err
}

// prefix is a journal holding the first k entries of j: what a run killed after
// its k-th checkpoint left.
func (j *memJournal) prefix(k int) *memJournal {
	j.mu.Lock()
	defer j.mu.Unlock()
	return &memJournal{entries: append([]journalEntry(nil), j.entries[:k]...)}
}

// threeCallAgent is an agent whose model asks for three calls of tool "count"
// in its first turn, one more in its second, and answers with the results it saw
// in its third. It counts model turns and tool runs (by argument) and the
// idempotency keys the tool saw.
type threeCallAgent struct {
	a     *agent.Agent
	turns atomic.Int64
	mu    sync.Mutex
	runs  map[string]int
	keys  map[string]bool
}

func newThreeCallAgent(t *testing.T, parallel bool) *threeCallAgent {
	t.Helper()
	h := &threeCallAgent{runs: map[string]int{}, keys: map[string]bool{}}
	count := &tool.Tool{ID: "count", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
		who, _ := args["who"].(string)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.runs[who]++
		if k, ok := durable.KeyFrom(ctx); ok {
			if h.keys[k] {
				return tool.Result{}, fmt.Errorf("idempotency key %s used by two calls", k)
			}
			h.keys[k] = true
		}
		return tool.TextResult("did " + who), nil
	}}
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		h.turns.Add(1)
		switch len(req.Messages) {
		case 1:
			return calls(call("c1", "count", `{"who":"a"}`), call("c2", "count", `{"who":"b"}`), call("c3", "count", `{"who":"c"}`)), nil
		case 5:
			return calls(call("c1", "count", `{"who":"d"}`)), nil // a provider may reuse a call id
		}
		var seen []string
		for _, m := range req.Messages {
			if m.Role == agent.RoleTool {
				seen = append(seen, m.Text)
			}
		}
		return answer(strings.Join(seen, ",")), nil
	})
	h.a = mustNew(t, agent.Config{ID: "j", ParallelToolCalls: &parallel}, m, testTools(t, count))
	return h
}

func (h *threeCallAgent) toolRuns() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.runs {
		n += r
	}
	return n
}

// A durable agent resumed from any checkpoint of an earlier run asks the model
// only for the turns the journal lacks and runs only the tool calls it lacks,
// and ends with the same answer; with parallel tool calls too.
func TestJournaledAgentResumesWithoutRedoing(t *testing.T) {
	t.Parallel()
	for _, parallel := range []bool{false, true} {
		full := newThreeCallAgent(t, parallel)
		j := &memJournal{}
		ctx := durable.WithKey(durable.WithJournal(context.Background(), j), "run-1/0/0")
		res, err := full.a.Run(ctx, agent.Request{Message: "go"})
		if err != nil {
			t.Fatal(err)
		}
		const want = "did a,did b,did c,did d"
		if res.Text != want || full.turns.Load() != 3 || full.toolRuns() != 4 {
			t.Fatalf("parallel=%v: first run answered %q after %d turns and %d tool runs", parallel, res.Text, full.turns.Load(), full.toolRuns())
		}
		// Entries: turn 1, its 3 results, turn 2, its result, turn 3.
		if len(j.entries) != 7 {
			t.Fatalf("parallel=%v: %d journal entries, want 7", parallel, len(j.entries))
		}
		for k := 0; k <= len(j.entries); k++ {
			resumed := newThreeCallAgent(t, parallel)
			res, err := resumed.a.Run(durable.WithKey(durable.WithJournal(context.Background(), j.prefix(k)), "run-1/0/0"), agent.Request{Message: "go"})
			if err != nil {
				t.Fatalf("parallel=%v, resumed after %d entries: %v", parallel, k, err)
			}
			recordedTurns, recordedTools := 0, 0
			for _, e := range j.entries[:k] {
				if strings.HasSuffix(e.name, " model") {
					recordedTurns++
				} else {
					recordedTools++
				}
			}
			if res.Text != want {
				t.Errorf("parallel=%v, resumed after %d entries: answer %q", parallel, k, res.Text)
			}
			if got := resumed.turns.Load(); got != int64(3-recordedTurns) {
				t.Errorf("parallel=%v, resumed after %d entries: asked the model %d times, want %d", parallel, k, got, 3-recordedTurns)
			}
			if got := resumed.toolRuns(); got != 4-recordedTools {
				t.Errorf("parallel=%v, resumed after %d entries: ran tools %d times, want %d", parallel, k, got, 4-recordedTools)
			}
			if res.ToolCalls != 4 || res.Iterations != 3 || res.Usage != fullUsage {
				t.Errorf("parallel=%v, resumed after %d entries: counted %d calls, %d iterations", parallel, k, res.ToolCalls, res.Iterations)
			}
		}
	}
}

// fullUsage is the usage a complete run of the three-call agent counts.
var fullUsage = agent.Usage{InputTokens: 10 + 10 + 20, OutputTokens: 5 + 5 + 7}

// Each tool call of a durable agent gets its own idempotency key (the tool
// fails on a key it saw before), the same one when the run does it again.
func TestJournaledAgentToolKeys(t *testing.T) {
	t.Parallel()
	h := newThreeCallAgent(t, true)
	ctx := durable.WithKey(durable.WithJournal(context.Background(), &memJournal{}), "run-2/1/0")
	if _, err := h.a.Run(ctx, agent.Request{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range []string{"run-2/1/0/turn-1/call-0", "run-2/1/0/turn-1/call-2", "run-2/1/0/turn-2/call-0"} {
		if !h.keys[k] {
			t.Errorf("no call had key %s; keys: %v", k, h.keys)
		}
	}
}

// A journal recorded by another agent (its configuration changed under a
// pending run) fails the run with the journal's error instead of mixing runs.
func TestJournalOfAnotherAgentFails(t *testing.T) {
	t.Parallel()
	j := &memJournal{entries: []journalEntry{{name: "agent other turn 1 model", raw: json.RawMessage(`{"text":"hi"}`)}}}
	h := newThreeCallAgent(t, false)
	_, err := h.a.Run(durable.WithJournal(context.Background(), j), agent.Request{Message: "go"})
	if err == nil || !strings.Contains(err.Error(), "workflow changed") || h.turns.Load() != 0 {
		t.Fatalf("err %v after %d model turns", err, h.turns.Load())
	}
}
