package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/arvenza/helix/internal/report"
)

// progressRecorder is a Conn with one call waiting for progress under token "t1",
// and what the call's reporter received.
type progressRecorder struct {
	c   *Conn
	mu  sync.Mutex
	got []string
}

func newProgressRecorder() *progressRecorder {
	r := &progressRecorder{c: &Conn{}}
	ctx := report.WithReporter(context.Background(), report.Func{OnProgress: func(_ context.Context, current, total float64, message string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, fmt.Sprintf("%g/%g %s", current, total, message))
	}})
	r.c.progress.Store("t1", ctx)
	r.c.waiting.Add(1)
	return r
}

func (r *progressRecorder) reports() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.got, "|")
}

func progressEvent(token any, progress float64, eol string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
		"params": map[string]any{"progressToken": token, "progress": progress, "total": 4, "message": "m"}})
	return "event: message" + eol + "data: " + string(b) + eol + eol
}

// An event stream read in pieces of one byte, with CRLF and LF line ends, a large
// result and progress for other tokens: the stream arrives unchanged and exactly the
// progress for the waiting call is reported, in order, before the bytes that follow it.
func TestProgressBodyForwardsWhatStreamsBy(t *testing.T) {
	t.Parallel()
	rec := newProgressRecorder()
	big := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", maxScannedEvent) + `"}]}}`
	stream := ": comment\n\n" +
		progressEvent("t1", 1, "\r\n") +
		progressEvent("other", 2, "\n") +
		progressEvent(7, 2, "\n") +
		"data: " + big + "\n\n" +
		progressEvent("t1", 2, "\n") +
		"data: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t1\",\"progress\":3}}\n\n" +
		progressEvent("t1", 4, "\n")
	body := &progressBody{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(stream))), c: rec.c}
	out, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != stream {
		t.Fatal("the stream was changed on its way through")
	}
	if got, want := rec.reports(), "1/4 m|2/4 m|3/0 |4/4 m"; got != want {
		t.Fatalf("reported %q, want %q", got, want)
	}
}

// Without a waiting call nothing is decoded or reported.
func TestProgressBodyIdleWithoutWaitingCalls(t *testing.T) {
	t.Parallel()
	rec := newProgressRecorder()
	rec.c.waiting.Add(-1)
	body := &progressBody{ReadCloser: io.NopCloser(strings.NewReader(progressEvent("t1", 1, "\n"))), c: rec.c}
	if _, err := io.ReadAll(body); err != nil {
		t.Fatal(err)
	}
	if got := rec.reports(); got != "" {
		t.Fatalf("reported %q", got)
	}
}

type fakeConn struct{ msgs []jsonrpc.Message }

func (f *fakeConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(f.msgs) == 0 {
		return nil, io.EOF
	}
	m := f.msgs[0]
	f.msgs = f.msgs[1:]
	return m, nil
}
func (f *fakeConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (f *fakeConn) Close() error                                 { return nil }
func (f *fakeConn) SessionID() string                            { return "" }

// Over stdio the connection's messages are read through progressConn.
func TestProgressConnForwardsProgress(t *testing.T) {
	t.Parallel()
	rec := newProgressRecorder()
	params := json.RawMessage(`{"progressToken":"t1","progress":2,"total":4}`)
	call, err := jsonrpc.MakeID(float64(1))
	if err != nil {
		t.Fatal(err)
	}
	pc := &progressConn{Connection: &fakeConn{msgs: []jsonrpc.Message{
		&jsonrpc.Request{Method: "notifications/progress", Params: params},
		&jsonrpc.Request{ID: call, Method: "notifications/progress", Params: params}, // a call, not a notification
		&jsonrpc.Response{ID: call, Result: json.RawMessage(`{}`)},
	}}, c: rec.c}
	for i := 0; i < 3; i++ {
		if _, err := pc.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.reports(); got != "2/4 " {
		t.Fatalf("reported %q", got)
	}
}
