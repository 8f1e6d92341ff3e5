// Command limit is the reference point of the side-by-side benchmark: an MCP echo
// server written as one plain net/http JSON-RPC handler. It answers initialize
// (issuing session ids), notifications, tools/list and tools/call and nothing else;
// what it costs per call is the floor for any Go MCP server on the same machine.
package main

import (
	"crypto/rand"
	"encoding/json"
	_ "expvar" // /debug/vars for the load tool's allocation figures
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callResult struct {
	Content []textContent `json:"content"`
	IsError bool          `json:"isError,omitempty"`
}

var echoTool = map[string]any{
	"name":        "echo",
	"description": "Returns its text argument",
	"inputSchema": map[string]any{
		"type":       "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}},
		"required":   []string{"text"},
	},
}

type server struct {
	sessions sync.Map // Mcp-Session-Id → struct{}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, response{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{-32700, "parse error: " + err.Error()}})
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if req.Method != "initialize" && sid != "" {
		if _, ok := s.sessions.Load(sid); !ok {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
	}
	if len(req.ID) == 0 { // notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	resp := response{JSONRPC: "2.0", ID: req.ID}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		id := rand.Text()
		s.sessions.Store(id, struct{}{})
		w.Header().Set("Mcp-Session-Id", id)
		resp.Result = map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "limit", "version": "1.0.0"},
		}
	case "ping":
		resp.Result = map[string]any{}
	case "tools/list":
		resp.Result = map[string]any{"tools": []any{echoTool}}
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			resp.Error = &rpcError{-32602, "invalid params: " + err.Error()}
		} else if p.Name != "echo" {
			resp.Error = &rpcError{-32602, fmt.Sprintf("unknown tool %q", p.Name)}
		} else {
			resp.Result = callResult{Content: []textContent{{Type: "text", Text: p.Arguments.Text}}}
		}
	default:
		resp.Error = &rpcError{-32601, "method not found: " + req.Method}
	}
	writeJSON(w, resp)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil && !strings.Contains(err.Error(), "broken pipe") {
		log.Printf("write response: %v", err)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:3101", "listen address")
	flag.Parse()
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", http.DefaultServeMux)
	mux.Handle("/", &server{})
	log.Printf("limit peer on http://%s/mcp", *addr)
	if err := http.ListenAndServe(*addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, "limit:", err)
		os.Exit(1)
	}
}
