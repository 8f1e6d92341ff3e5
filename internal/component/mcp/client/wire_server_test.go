package client

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// wireServer is a Streamable HTTP MCP server written at the wire level, so that a
// test can answer each request as a server of either era would (or as a broken one
// would): handle returns false to fall through to the default answers, which are
// those of a sessionless 2026-07-28 server.
type wireServer struct {
	t      *testing.T
	url    string
	handle func(w http.ResponseWriter, r *http.Request, msg *wireMsg) bool
	tools  []map[string]any
	ttlMs  atomic.Int64 // of tools/list answers

	mu   sync.Mutex
	seen []wireSeen
}

type wireMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// wireSeen is one request the server received.
type wireSeen struct {
	Path   string
	Method string
	Header http.Header
	Params json.RawMessage
}

func newWireServer(t *testing.T, tools []map[string]any, handle func(http.ResponseWriter, *http.Request, *wireMsg) bool) *wireServer {
	ws := &wireServer{t: t, handle: handle, tools: tools}
	hs := httptest.NewServer(http.HandlerFunc(ws.serve))
	t.Cleanup(hs.Close)
	ws.url = hs.URL
	return ws
}

func (ws *wireServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	data, _ := io.ReadAll(r.Body)
	var msg wireMsg
	if err := json.Unmarshal(data, &msg); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	ws.mu.Lock()
	ws.seen = append(ws.seen, wireSeen{Path: r.URL.Path, Method: msg.Method, Header: r.Header.Clone(), Params: msg.Params})
	ws.mu.Unlock()
	if ws.handle != nil && ws.handle(w, r, &msg) {
		return
	}
	if msg.ID == nil { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch msg.Method {
	case "server/discover":
		writeResult(w, msg.ID, map[string]any{
			"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
			"supportedVersions": []string{protocolModern},
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"serverInfo":        map[string]any{"name": "wire", "version": "1"},
		})
	case "tools/list":
		writeResult(w, msg.ID, map[string]any{"resultType": "complete", "ttlMs": ws.ttlMs.Load(), "cacheScope": "private", "tools": ws.tools})
	case "tools/call":
		writeResult(w, msg.ID, map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "ok"}}})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
	}
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// requests returns the requests received with the given method.
func (ws *wireServer) requests(method string) []wireSeen {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var out []wireSeen
	for _, s := range ws.seen {
		if s.Method == method {
			out = append(out, s)
		}
	}
	return out
}

// all returns every request received, in order.
func (ws *wireServer) all() []wireSeen {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return slices.Clone(ws.seen)
}

// methods returns the methods of every request received, in order.
func (ws *wireServer) methods() []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := make([]string, len(ws.seen))
	for i, s := range ws.seen {
		out[i] = s.Method
	}
	return out
}
