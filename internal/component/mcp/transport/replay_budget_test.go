package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigServer has a tool "big" that answers with size bytes of text after one
// progress notification (so the answer is an event stream) and a tool "pollbig"
// that closes its POST's stream first (the client must resume to get the answer).
func bigServer(t *testing.T, size int) *sdk.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "big", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}})
	text := strings.Repeat("x", size)
	srv.AddTool(&sdk.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1}); err != nil {
					return nil, err
				}
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "pollbig", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: time.Millisecond})
			time.Sleep(50 * time.Millisecond) // the POST's stream is closed by now
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		})
	return srv
}

// replayBytes sums what the handler's sessions keep for replay.
func replayBytes(h *StreamableHandler) int {
	h.mu.Lock()
	conns := make([]*streamConn, 0, len(h.sessions))
	for _, c := range h.sessions {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	total := 0
	for _, c := range conns {
		c.mu.Lock()
		total += c.replay.bytes
		c.mu.Unlock()
	}
	return total
}

// TestReplayBudgetBoundsManySessions is the attack in miniature: many sessions,
// each with one large answer that travels as an event stream (a progress token).
// Every client gets its whole answer, and what stays kept for replay across all
// sessions stays within the budget (each session kept its newest event whatever
// its size, 800 × 1 MB killed the process).
func TestReplayBudgetBoundsManySessions(t *testing.T) {
	t.Parallel()
	const budget, size, sessions = 64 << 10, 20 << 10, 24
	b := NewReplayBudget(budget)
	h := NewStreamableHandler(bigServer(t, size), &Options{ReplayBudget: b})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := initSessionWith(t, ts.URL, initBody("2025-11-25", "{}"))
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{},"_meta":{"progressToken":"p%d"}}}`, i+10, i)
			r := send(t, http.MethodPost, ts.URL, map[string]string{"Mcp-Session-Id": sid}, body)
			if r.status != http.StatusOK || !strings.Contains(r.body, strings.Repeat("x", size)) {
				errs <- fmt.Errorf("session %d: %d, %d bytes", i, r.status, len(r.body))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if kept := replayBytes(h); kept > budget {
		t.Fatalf("the sessions keep %d bytes for replay, over the budget of %d", kept, budget)
	}
	if used := b.Used(); used > budget || int(used) != replayBytes(h) {
		t.Fatalf("budget used %d, sessions keep %d, budget %d", used, replayBytes(h), budget)
	}
	if b.Dropped() == 0 {
		t.Fatalf("no event was dropped, yet %d × %d bytes exceed the budget", sessions, size)
	}
}

// TestReplayEventOverBudgetIsNotKept: an event larger than the budget is not kept;
// a client resuming from before it is told to send its request again.
func TestReplayEventOverBudgetIsNotKept(t *testing.T) {
	t.Parallel()
	const budget, size = 8 << 10, 16 << 10
	b := NewReplayBudget(budget)
	h := NewStreamableHandler(bigServer(t, size), &Options{ReplayBudget: b})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	sid := initSessionWith(t, ts.URL, initBody("2025-11-25", "{}"))
	hdr := map[string]string{"Mcp-Session-Id": sid}
	r := send(t, http.MethodPost, ts.URL, hdr, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"pollbig","arguments":{}}}`)
	evs := parseEvents(r.body)
	if r.status != http.StatusOK || len(evs) == 0 || !evs[0].hasID {
		t.Fatalf("POST: %d %q", r.status, r.body)
	}
	deadline := time.Now().Add(testTimeout)
	for b.Dropped() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if kept := replayBytes(h); kept > budget || b.Dropped() != 1 {
		t.Fatalf("kept %d bytes (budget %d), dropped %d", kept, budget, b.Dropped())
	}
	r = send(t, http.MethodGet, ts.URL, map[string]string{"Mcp-Session-Id": sid, "Last-Event-ID": evs[0].id, "Accept": "text/event-stream"}, "")
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "no longer kept") || !strings.Contains(r.body, "send the request again") {
		t.Fatalf("resume: %d %q", r.status, r.body)
	}
	// Closing the session gives its share back.
	if r := send(t, http.MethodDelete, ts.URL, hdr, ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d", r.status)
	}
	if b.Used() != 0 {
		t.Fatalf("the closed session still holds %d bytes of the budget", b.Used())
	}
}
