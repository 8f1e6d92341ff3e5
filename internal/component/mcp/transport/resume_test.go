package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// initBody opens a session on protocol version with the client capabilities caps.
func initBody(version, caps string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`
}

func initSessionWith(t *testing.T, url, body string) string {
	t.Helper()
	r := send(t, http.MethodPost, url, nil, body)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", r.status, sid, r.body)
	}
	if r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return sid
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	id, retry, data string
	hasID           bool
}

// parseEvents splits an event-stream body into events (retry-only blocks included).
func parseEvents(body string) []sseEvent {
	var evs []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var e sseEvent
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				e.id, e.hasID = v, true
			case "retry":
				e.retry = v
			case "data":
				e.data += v
			}
		}
		evs = append(evs, e)
	}
	return evs
}

// pollServer has a tool "poll" that closes its POST's stream (SEP-1699 polling,
// RequestExtra.CloseSSEStream) and answers once release is closed.
func pollServer(t *testing.T, release <-chan struct{}) *sdk.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "poll", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}})
	srv.AddTool(&sdk.Tool{Name: "poll", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if req.Extra == nil || req.Extra.CloseSSEStream == nil {
				return nil, fmt.Errorf("no CloseSSEStream")
			}
			req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
		})
	return srv
}

const callPoll = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"poll","arguments":{}}}`

// TestStreamResumption: on a 2025-11-25 session the POST answer starts with a
// priming event (id, retry, empty data); the server closes it mid-call with a
// retry hint; GET with Last-Event-ID resumes it and gets the result, with the
// next id of the same stream; asking again replays it, and the last id replays
// nothing.
func TestStreamResumption(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	url := rawServer(t, pollServer(t, release), Options{})
	sid := initSessionWith(t, url, initBody("2025-11-25", "{}"))
	h := map[string]string{"Mcp-Session-Id": sid}

	r := send(t, http.MethodPost, url, h, callPoll)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("POST: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	evs := parseEvents(r.body)
	if len(evs) != 2 {
		t.Fatalf("want the priming event and the closing retry hint, got %q", r.body)
	}
	prime := evs[0]
	stream, idx, ok := parseEventID(prime.id)
	if !ok || idx != 0 || prime.data != "" || prime.retry != "1000" {
		t.Fatalf("priming event %+v of %q", prime, r.body)
	}
	if evs[1].hasID || evs[1].data != "" || evs[1].retry != "20" {
		t.Fatalf("closing event %+v", evs[1])
	}

	// Resume while the call runs: the result comes on the GET, then it ends.
	got := make(chan rawReply, 1)
	go func() {
		got <- send(t, http.MethodGet, url, map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": prime.id}, "")
	}()
	time.Sleep(50 * time.Millisecond) // let the GET attach before the answer exists (either order must work)
	close(release)
	g := <-got
	evs = parseEvents(g.body)
	if g.status != http.StatusOK || len(evs) != 1 || evs[0].id != formatEventID(stream, 1) ||
		!strings.Contains(evs[0].data, `"id":5,"result"`) || !strings.Contains(evs[0].data, `"text":"done"`) {
		t.Fatalf("resumed GET: %d %q", g.status, g.body)
	}
	// The answer is kept: the same Last-Event-ID replays it; the last id, nothing.
	g = send(t, http.MethodGet, url, map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": prime.id}, "")
	if evs := parseEvents(g.body); g.status != http.StatusOK || len(evs) != 1 || evs[0].id != formatEventID(stream, 1) {
		t.Fatalf("replay: %d %q", g.status, g.body)
	}
	g = send(t, http.MethodGet, url, map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": formatEventID(stream, 1)}, "")
	if g.status != http.StatusOK || strings.Contains(g.body, "data:") {
		t.Fatalf("replay after the last event: %d %q", g.status, g.body)
	}
	// The request id is free again once answered.
	if r := send(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); r.status != http.StatusOK {
		t.Fatalf("id 5 after the answer: %d %s", r.status, r.body)
	}
}

// TestStreamResumptionRefusals: a Last-Event-ID of another session's stream, an
// unknown stream, an index never issued or a malformed id replays nothing (400);
// a stream being delivered cannot be taken over (409).
func TestStreamResumptionRefusals(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	url := rawServer(t, pollServer(t, release), Options{})
	a := initSessionWith(t, url, initBody("2025-11-25", "{}"))
	b := initSessionWith(t, url, initBody("2025-11-25", "{}"))
	r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": a}, callPoll)
	evs := parseEvents(r.body)
	if len(evs) == 0 || !evs[0].hasID {
		t.Fatalf("POST: %q", r.body)
	}
	stream, _, _ := parseEventID(evs[0].id)
	get := func(sid, last string) rawReply {
		return send(t, http.MethodGet, url, map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": last}, "")
	}
	for name, tc := range map[string]struct{ sid, last string }{
		"another session's stream": {b, evs[0].id},
		"unknown stream":           {a, "AAAAAAAAAAAAAAAA_0"},
		"index never issued":       {a, formatEventID(stream, 7)},
		"malformed":                {a, "nonsense"},
		"negative index":           {a, stream + "_-1"},
	} {
		g := get(tc.sid, tc.last)
		if g.status != http.StatusBadRequest || strings.Contains(g.body, "data:") {
			t.Errorf("%s: %d %q", name, g.status, g.body)
		}
	}
	// A huge id is refused without being sent back whole.
	if g := get(a, strings.Repeat("é", 4000)+"_0"); g.status != http.StatusBadRequest || len(g.body) > 300 {
		t.Errorf("huge id: %d, %d bytes answered", g.status, len(g.body))
	}
	if g := get("unknown-session", evs[0].id); g.status != http.StatusNotFound {
		t.Errorf("unknown session: %d %q", g.status, g.body)
	}

	// One reader at a time.
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", a)
	req.Header.Set("Last-Event-ID", evs[0].id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d", resp.StatusCode)
	}
	if g := get(a, evs[0].id); g.status != http.StatusConflict {
		t.Errorf("second reader: %d %q", g.status, g.body)
	}
}

// TestStreamsOfOlderProtocolsHaveNoIDs: before 2025-11-25 there is no priming and
// no event id, so that clients are not invited to resume.
func TestStreamsOfOlderProtocolsHaveNoIDs(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{})
	sid := initSessionWith(t, url, initBody("2025-06-18", "{}"))
	r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream"}, callEcho)
	if strings.Contains(r.body, "id:") || strings.Contains(r.body, "retry:") || !strings.Contains(r.body, `"id":7,"result"`) {
		t.Fatalf("2025-06-18 stream: %q", r.body)
	}
	// 2025-11-25: the SSE-only answer is primed and every event has an id.
	sid = initSessionWith(t, url, initBody("2025-11-25", "{}"))
	r = send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid, "Accept": "text/event-stream"}, callEcho)
	evs := parseEvents(r.body)
	if len(evs) != 2 || evs[0].data != "" || !evs[0].hasID || !evs[1].hasID || !strings.Contains(evs[1].data, `"id":7,"result"`) {
		t.Fatalf("2025-11-25 stream: %q", r.body)
	}
	// A client that accepts JSON still gets plain JSON when nothing else travels.
	r = send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid}, callEcho)
	if r.header.Get("Content-Type") != "application/json" || !strings.HasPrefix(r.body, `{"jsonrpc":"2.0","id":7,"result"`) {
		t.Fatalf("JSON answer: %q %q", r.header.Get("Content-Type"), r.body)
	}
}

// TestReplayBufferBounds: a session keeps at most replayMaxStreams streams and
// about replayMaxBytes of events; answered streams go first, then the oldest
// events, never what an attached reader has not written yet; an event larger than
// the session's limit is not kept (its stream cannot be resumed from before it); a
// Last-Event-ID before what is kept is refused.
func TestReplayBufferBounds(t *testing.T) {
	t.Parallel()
	h := &StreamableHandler{logger: slog.New(slog.DiscardHandler), budget: NewReplayBudget(DefaultReplayBudget)}
	c := newStreamConn(h, "s")
	big := strings.Repeat("x", replayMaxBytes/8)
	result := func(id int64) *jsonrpc.Response {
		return &jsonrpc.Response{ID: intID(t, id), Result: json.RawMessage(`"` + big + `"`)}
	}
	c.mu.Lock()
	var streams []*replayStream
	for i := range replayMaxStreams + 10 {
		s, r := c.openStreamLocked(1)
		s.reader = nil // the POST went away
		_ = r
		c.appendLocked(s, result(int64(i)))
		streams = append(streams, s)
	}
	if len(c.replay.streams) > replayMaxStreams || c.replay.bytes > replayMaxBytes {
		t.Fatalf("buffer holds %d streams, %d bytes", len(c.replay.streams), c.replay.bytes)
	}
	if c.replay.find(streams[0].id) != nil || c.replay.find(streams[len(streams)-1].id) == nil {
		t.Fatal("the oldest answered streams must go first")
	}
	// Open streams are not dropped whole; their old events are, but not what an
	// attached reader still has to write.
	c.replay.clear()
	open, _ := c.openStreamLocked(100)
	open.reader = nil
	for range 20 {
		c.appendLocked(open, &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`"` + big + `"`)})
	}
	if c.replay.find(open.id) == nil || c.replay.bytes > replayMaxBytes || open.first == 0 {
		t.Fatalf("open stream: kept=%v bytes=%d first=%d", c.replay.find(open.id) != nil, c.replay.bytes, open.first)
	}
	huge, _ := c.openStreamLocked(1)
	huge.reader = nil
	c.appendLocked(huge, &jsonrpc.Response{ID: intID(t, 1), Result: json.RawMessage(`"` + strings.Repeat("y", 2*replayMaxBytes) + `"`)})
	if len(huge.events) != 0 || huge.first != huge.next || c.replay.bytes > replayMaxBytes {
		t.Fatalf("an event over the session's limit was kept: %d events, first %d, next %d", len(huge.events), huge.first, huge.next)
	}
	reading, rd := c.openStreamLocked(100)
	for range 20 {
		c.appendLocked(reading, &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`"` + big + `"`)})
	}
	if reading.first != 0 || rd.cursor != -1 {
		t.Fatalf("events a reader has not written were dropped (first=%d)", reading.first)
	}
	c.mu.Unlock()

	// Resuming before what is kept: 400, nothing replayed.
	srv := httptestServer(t, h, c)
	g := send(t, http.MethodGet, srv, map[string]string{"Mcp-Session-Id": "s", "Accept": "text/event-stream", "Last-Event-ID": formatEventID(open.id, 0)}, "")
	if g.status != http.StatusBadRequest || !strings.Contains(g.body, "no longer kept") {
		t.Fatalf("resume before the kept events: %d %q", g.status, g.body)
	}
}

func intID(t *testing.T, n int64) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func rawHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// httptestServer serves h with c as its only session.
func httptestServer(t *testing.T, h *StreamableHandler, c *streamConn) string {
	t.Helper()
	h.sessions = map[string]*streamConn{c.id: c}
	return rawHandler(t, h)
}

// TestJSONOnlyClientCannotBeAsked: a request to the client (elicitation) during a
// call whose POST accepts only application/json fails at once with an error
// naming text/event-stream, unless the session's GET stream is open: then it
// travels there and the client's answer completes the call.
func TestJSONOnlyClientCannotBeAsked(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "ask", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(RelatedTo(ctx, req.Extra), &sdk.ElicitParams{Message: "name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}}})
			if err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "answer: " + res.Action}}}, nil
		})
	url := rawServer(t, srv, Options{})
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			sid := initSessionWith(t, url, initBody(version, `{"elicitation":{}}`))
			jsonOnly := map[string]string{"Mcp-Session-Id": sid, "Accept": "application/json"}
			call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask","arguments":{}}}`
			start := time.Now()
			r := send(t, http.MethodPost, url, jsonOnly, call)
			if r.header.Get("Content-Type") != "application/json" || !strings.Contains(r.body, `"isError":true`) ||
				!strings.Contains(r.body, "text/event-stream") || time.Since(start) > 10*time.Second {
				t.Fatalf("JSON-only call: %q %s (%v)", r.header.Get("Content-Type"), r.body, time.Since(start))
			}

			// With the GET stream open, the request travels there.
			resp := openStandalone(t, url, sid)
			answered := make(chan rawReply, 1)
			go func() {
				call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","arguments":{}}}`
				answered <- send(t, http.MethodPost, url, jsonOnly, call)
			}()
			var asked struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			lines := bufio.NewReader(resp.Body)
			for asked.Method != "elicitation/create" {
				line, err := lines.ReadString('\n')
				if err != nil {
					t.Fatalf("GET stream ended before the elicitation: %v", err)
				}
				if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
					_ = json.Unmarshal([]byte(data), &asked)
				}
			}
			reply := `{"jsonrpc":"2.0","id":` + string(asked.ID) + `,"result":{"action":"decline"}}`
			if r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid}, reply); r.status != http.StatusAccepted {
				t.Fatalf("answer: %d %s", r.status, r.body)
			}
			r = <-answered
			if !strings.Contains(r.body, "answer: decline") {
				t.Fatalf("call after the answer: %s", r.body)
			}
			_ = resp.Body.Close() // ends the GET stream
		})
	}
}
