// Command gosdk is the official MCP go-sdk (v1.8.0) echo server with stock options,
// the baseline Helix builds on. -json and -stateless switch the two options that
// change the wire behaviour, for experiments; the benchmark runs it stock.
package main

import (
	"context"
	_ "expvar" // /debug/vars for the load tool's allocation figures
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"text to return"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:3102", "listen address")
	jsonResp := flag.Bool("json", false, "answer with application/json instead of an SSE stream")
	stateless := flag.Bool("stateless", false, "serve without sessions")
	flag.Parse()

	srv := mcp.NewServer(&mcp.Implementation{Name: "gosdk-peer", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Returns its text argument"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{JSONResponse: *jsonResp, Stateless: *stateless})
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", http.DefaultServeMux)
	mux.Handle("/", h)
	log.Printf("go-sdk peer on http://%s/mcp", *addr)
	if err := http.ListenAndServe(*addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, "gosdk:", err)
		os.Exit(1)
	}
}
