// Command gosdkconn measures the headroom of the proposal in docs/performance.md:
// the go-sdk v1.8.0 server (session layer, tools) behind a minimal Streamable HTTP
// front of our own that implements the SDK's public mcp.Transport and
// mcp.Connection interfaces and decodes each POST with encoding/json, so that the
// SDK's transport-layer decoding (jsonrpc2.DecodeMessage, readBatch and the
// transport's _meta scan, each allocating a 32 KiB decoder buffer) is skipped.
//
// It is a benchmark peer, not a complete transport: it answers POSTed requests
// and notifications with application/json and ends sessions on DELETE, but has no
// standalone GET stream, drops server-to-client requests and notifications, and
// never evicts idle sessions. Helix does not use it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	_ "expvar" // /debug/vars for the load tool's allocation figures
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is one session's mcp.Connection: POST handlers feed requests to Read and
// wait for the Response that Write hands back under the same id.
type conn struct {
	id   string
	in   chan jsonrpc.Message
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	pending map[jsonrpc.ID]chan *jsonrpc.Response
}

func newConn() *conn {
	return &conn{id: rand.Text(), in: make(chan jsonrpc.Message, 16), done: make(chan struct{}),
		pending: map[jsonrpc.ID]chan *jsonrpc.Response{}}
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *conn) Write(_ context.Context, m jsonrpc.Message) error {
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		return nil // no stream to carry server-to-client messages in this peer
	}
	c.mu.Lock()
	ch := c.pending[r.ID]
	delete(c.pending, r.ID)
	c.mu.Unlock()
	if ch != nil {
		ch <- r // buffered: never blocks
	}
	return nil
}

func (c *conn) Close() error      { c.once.Do(func() { close(c.done) }); return nil }
func (c *conn) SessionID() string { return c.id }

type transport struct{ c *conn }

func (t transport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

type handler struct {
	srv      *mcp.Server
	sessions sync.Map // id → *mcp.ServerSession
	conns    sync.Map // id → *conn
}

// wire is a JSON-RPC message as posted by a client.
type wire struct {
	ID     any             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method == http.MethodDelete {
		if ss, ok := h.sessions.LoadAndDelete(sid); ok {
			h.conns.Delete(sid)
			_ = ss.(*mcp.ServerSession).Close()
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST or DELETE", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m wire
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, "not a JSON-RPC message: "+err.Error(), http.StatusBadRequest)
		return
	}
	var c *conn
	switch {
	case sid != "":
		v, ok := h.conns.Load(sid)
		if !ok {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		c = v.(*conn)
	case m.Method == "initialize":
		c = newConn()
		ss, err := h.srv.Connect(context.Background(), transport{c}, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h.sessions.Store(c.id, ss)
		h.conns.Store(c.id, c)
		w.Header().Set("Mcp-Session-Id", c.id)
	default:
		http.Error(w, "missing Mcp-Session-Id", http.StatusBadRequest)
		return
	}
	req := &jsonrpc.Request{Method: m.Method, Params: m.Params}
	if m.ID == nil { // notification
		select {
		case c.in <- req:
			w.WriteHeader(http.StatusAccepted)
		case <-c.done:
			http.Error(w, "session closed", http.StatusNotFound)
		}
		return
	}
	if req.ID, err = jsonrpc.MakeID(m.ID); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	c.pending[req.ID] = ch
	c.mu.Unlock()
	var resp *jsonrpc.Response
	select {
	case c.in <- req:
		select {
		case resp = <-ch:
		case <-c.done:
		case <-r.Context().Done():
		}
	case <-c.done:
	}
	if resp == nil {
		c.mu.Lock()
		delete(c.pending, req.ID)
		c.mu.Unlock()
		http.Error(w, "session closed", http.StatusNotFound)
		return
	}
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(out); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		log.Printf("write: %v", err)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:3104", "listen address")
	flag.Parse()
	srv := mcp.NewServer(&mcp.Implementation{Name: "gosdkconn-peer", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Returns its text argument",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", http.DefaultServeMux)
	mux.Handle("/", &handler{srv: srv})
	log.Printf("go-sdk behind an own Connection on http://%s/mcp", *addr)
	if err := http.ListenAndServe(*addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, "gosdkconn:", err)
		os.Exit(1)
	}
}
