package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// countingTool is a tool that counts its runs and answers "run N"; release, when
// not nil, holds each run until it is closed.
func countingTool(runs *atomic.Int64, release <-chan struct{}) *engine.Workflow {
	return &engine.Workflow{ID: "count", FromURI: "direct://count",
		Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
			n := runs.Add(1)
			if release != nil {
				<-release
			}
			ex.In().SetBody(fmt.Sprintf("run %d", n))
			return nil
		})}
}

func keyedCall(t *testing.T, cs *sdk.ClientSession, key any) *sdk.CallToolResult {
	t.Helper()
	params := &sdk.CallToolParams{Name: "count", Arguments: map[string]any{}}
	if key != nil {
		params.SetMeta(map[string]any{durable.MetaKey: key})
	}
	res, err := cs.CallTool(testCtx(t), params)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return res
}

// A call repeated with its idempotency key gets the first call's answer and the
// tool does not run again; another key, or no key, runs it.
func TestKeyedCallIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	cs := connectInMemory(t, newTestContext(t, countingTool(&runs, nil)), Options{ID: "keys"})
	first := resultText(t, keyedCall(t, cs, "run-1/2/0"))
	if again := resultText(t, keyedCall(t, cs, "run-1/2/0")); again != first || runs.Load() != 1 {
		t.Fatalf("repeat answered %q (first %q) after %d runs", again, first, runs.Load())
	}
	if other := resultText(t, keyedCall(t, cs, "run-1/3/0")); other != "run 2" {
		t.Fatalf("another key answered %q", other)
	}
	resultText(t, keyedCall(t, cs, nil))
	resultText(t, keyedCall(t, cs, nil))
	if runs.Load() != 4 {
		t.Fatalf("%d runs, want 4 (calls without a key always run)", runs.Load())
	}
	bad := keyedCall(t, cs, 42)
	if !bad.IsError || runs.Load() != 4 {
		t.Fatalf("a key that is no string: %+v after %d runs", bad, runs.Load())
	}
}

// Repeats arriving while the first call runs wait for its answer instead of
// running the tool alongside it.
func TestKeyedCallsRacingRunOnce(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	release := make(chan struct{})
	cs := connectInMemory(t, newTestContext(t, countingTool(&runs, release)), Options{ID: "race"})
	var wg sync.WaitGroup
	answers := make([]string, 8)
	for i := range answers {
		wg.Go(func() { answers[i] = resultText(t, keyedCall(t, cs, "run-9/1/0")) })
	}
	// Wait until the first run holds; the others must be waiting, not running.
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond) // polls the state the test waits for
	}
	close(release)
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("%d runs for 8 racing calls with one key", runs.Load())
	}
	for _, a := range answers {
		if a != "run 1" {
			t.Fatalf("answers %q", answers)
		}
	}
}

// A call that ended without an answer (final false) is not remembered: the
// repeat runs the tool.
func TestAnsweredForgetsCallsWithoutAnAnswer(t *testing.T) {
	t.Parallel()
	a := newAnswered()
	ctx := context.Background()
	ran := 0
	run := func(final bool) func() (*sdk.CallToolResult, bool) {
		return func() (*sdk.CallToolResult, bool) {
			ran++
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(ran)}}}, final
		}
	}
	a.do(ctx, "p", "t", "k", run(false))
	a.do(ctx, "p", "t", "k", run(true))
	a.do(ctx, "p", "t", "k", run(true))
	if ran != 2 {
		t.Fatalf("ran %d times, want 2", ran)
	}
	// Another principal or tool with the same key is another call.
	a.do(ctx, "q", "t", "k", run(true))
	a.do(ctx, "p", "u", "k", run(true))
	if ran != 4 {
		t.Fatalf("ran %d times, want 4", ran)
	}
	// Past answeredFor the answer is forgotten.
	now := time.Now()
	a.now = func() time.Time { return now.Add(answeredFor + time.Minute) }
	a.do(ctx, "p", "t", "k", run(true))
	if ran != 5 {
		t.Fatalf("an expired answer was used: ran %d times", ran)
	}
}

// The memory is bounded: past maxAnswered keys the oldest are forgotten.
func TestAnsweredIsBounded(t *testing.T) {
	t.Parallel()
	a := newAnswered()
	for i := range maxAnswered + 10 {
		a.do(context.Background(), "p", "t", fmt.Sprint(i), func() (*sdk.CallToolResult, bool) { return &sdk.CallToolResult{}, true })
	}
	if n := a.order.Len(); n != maxAnswered || len(a.entries) != maxAnswered {
		t.Fatalf("%d answers kept (%d in the index), want %d", n, len(a.entries), maxAnswered)
	}
}
