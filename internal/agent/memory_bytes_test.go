package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
)

// Memory is bounded in bytes too: a caller sending long messages under many
// session ids cannot grow it past MemoryBytes. The least recently used sessions
// go first, and a session that alone exceeds the budget keeps only what fits.
func TestMemoryBytesBound(t *testing.T) {
	var seen int
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		seen = len(req.Messages)
		return &agent.ModelResponse{Message: agent.Message{Text: "ok"}}, nil
	})
	a := mustNew(t, agent.Config{ID: "b", MemoryBytes: 1000}, m, nil)
	run := func(session, msg string) int {
		t.Helper()
		if _, err := a.Run(context.Background(), agent.Request{Message: msg, SessionID: session}); err != nil {
			t.Fatal(err)
		}
		return seen
	}
	big := strings.Repeat("x", 400)
	run("a", big) // a: ~400 bytes
	run("b", big) // b: ~400 bytes; 800 in all
	if n := run("a", "short"); n != 3 {
		t.Fatalf("a's second turn saw %d messages, want 3", n)
	}
	run("c", big) // over 1000: b, the least recently used, goes
	if n := run("b", "back"); n != 1 {
		t.Fatalf("b saw %d messages after its eviction, want 1", n)
	}
	// One session larger than the whole budget keeps only its latest turns.
	run("d", strings.Repeat("y", 700))
	if n := run("d", strings.Repeat("z", 700)); n != 3 {
		t.Fatalf("d's second turn saw %d messages, want 3", n)
	}
	if n := run("d", "now"); n != 3 {
		t.Fatalf("d kept too much: its third turn saw %d messages, want 3 (its second turn and this one)", n)
	}
}
