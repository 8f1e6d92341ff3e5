package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// serveLoop serves h on the loop and returns its address.
func serveLoop(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = (&loopServer{h: h}).serve(ln) }()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// rawConn is a client connection that reads answers as they are on the wire.
func rawConn(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // a bound for a broken loop only
	return c, bufio.NewReader(c)
}

func TestLoopAnswersWithLengthAndKeepsTheConnection(t *testing.T) {
	t.Parallel()
	addr := serveLoop(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"local":%q,"host":%q,`, local, r.Host)
		fmt.Fprintf(w, `"got":%s}`, b)
	}))
	c, br := rawConn(t, addr)
	for i := range 3 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		want := fmt.Sprintf(`{"local":%q,"host":%q,"got":%s}`, addr, addr, body)
		if string(got) != want || resp.ContentLength != int64(len(want)) || len(resp.TransferEncoding) > 0 {
			t.Fatalf("call %d: %q (length %d, %v), want %q with its length", i, got, resp.ContentLength, resp.TransferEncoding, want)
		}
	}
}

func TestLoopStreamsFlushedAnswers(t *testing.T) {
	t.Parallel()
	firstRead := make(chan struct{})
	addr := serveLoop(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-firstRead
		fmt.Fprint(w, "data: two\n\n")
	}))
	c, br := rawConn(t, addr)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer encoding %v, want chunked", resp.TransferEncoding)
	}
	sr := bufio.NewReader(resp.Body)
	if line, err := sr.ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	close(firstRead)
	if rest, _ := io.ReadAll(sr); string(rest) != "\ndata: two\n\n" {
		t.Fatalf("rest %q", rest)
	}
	// The connection takes the next request after the stream's end.
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatalf("next request: %v", err)
	}
}

func TestLoopCancelsAStreamWhoseClientLeft(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	addr := serveLoop(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(cancelled)
	}))
	c, br := rawConn(t, addr)
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-cancelled
}

func TestLoopDrainsAnUnreadBody(t *testing.T) {
	t.Parallel()
	addr := serveLoop(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	c, br := rawConn(t, addr)
	for range 2 {
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%v, %v", resp, err)
		}
		resp.Body.Close()
	}
}

func TestLoopRefusesWhatItDoesNotServe(t *testing.T) {
	t.Parallel()
	addr := serveLoop(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("handler called for %s %s", r.Method, r.URL)
	}))
	for _, c := range []struct {
		req  string
		code int
	}{
		{"NOT HTTP\r\n\r\n", http.StatusBadRequest},
		{"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", http.StatusNotImplemented},
		{"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", http.StatusExpectationFailed},
		{"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", loopMaxHeader+8192) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
	} {
		conn, br := rawConn(t, addr)
		go fmt.Fprint(conn, c.req) // the loop may answer before it read everything
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%.40q: %v", c.req, err)
		}
		if resp.StatusCode != c.code || !resp.Close {
			t.Errorf("%.40q: status %d (close %v), want %d and close", c.req, resp.StatusCode, resp.Close, c.code)
		}
	}
}

// TestGatewayOnTheLoop runs the whole gateway (Helix's transport, the relay)
// behind the loop in front of a go-sdk server, with a go-sdk client: a session
// is opened, a tool is called and listed, and the session ended.
func TestGatewayOnTheLoop(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(up.Close)

	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, addr, up.URL+"/mcp", true, true, true) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	testtools.Eventually(t, "the loop listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
		t.Fatalf("tools %+v, %v", tools, err)
	}
	for i := range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprint("hi ", i)}})
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != fmt.Sprint("hi ", i) || res.IsError {
			t.Fatalf("call %d: %+v", i, res.Content[0])
		}
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
