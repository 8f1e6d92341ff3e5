// Command mcpgo is the mark3labs/mcp-go (v1.2.1) echo server with stock options
// over Streamable HTTP.
package main

import (
	"context"
	_ "expvar" // /debug/vars for the load tool's allocation figures
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3103", "listen address")
	stateless := flag.Bool("stateless", false, "serve without sessions")
	flag.Parse()

	s := server.NewMCPServer("mcpgo-peer", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Returns its text argument"),
		mcp.WithString("text", mcp.Required(), mcp.Description("text to return"))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := req.RequireString("text")
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(text), nil
		})
	h := server.NewStreamableHTTPServer(s, server.WithStateLess(*stateless))
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", http.DefaultServeMux)
	mux.Handle("/", h)
	log.Printf("mcp-go peer on http://%s/mcp", *addr)
	if err := http.ListenAndServe(*addr, mux); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgo:", err)
		os.Exit(1)
	}
}
