// Package mcp connects Helix to the Model Context Protocol, on both sides. It is the
// public facade of internal packages, one per role: it offers what a Go program
// needs (NewServer, ServerOptions, NewSDKServer, NewClient …; docs/go-api.md shows
// them) and keeps Helix's own wiring of those packages internal.
//
//   - [github.com/arvenza/helix/internal/component/mcp/server]: the mcp-server
//     component. It serves tools of the tool catalogue (package
//     github.com/arvenza/helix/internal/tool) as MCP tools; by default the workflows of
//     an engine context: each exposed workflow with a trigger becomes one tool whose
//     name is the workflow id with '.', '-' and '/' replaced by '_'
//     ([SanitizeToolName]). A call creates an InOut exchange whose body is the
//     call's arguments, runs it through the workflow's whole pipeline with
//     engine.Context.Run, and answers with the reply body. A failing or panicking
//     workflow yields a result with isError set, never a protocol error. Every
//     server also offers the resource helix://workflows (alias helix://routes).
//     Servers are declared three ways, all ending in the same code: an
//     mcp-server://host:port trigger, [ServerComponent.AddServer] (helix.yaml's
//     helix.mcp.servers and mcps:), and [NewSDKServer] for embedding the tools into
//     a go-sdk server on any transport.
//   - [github.com/arvenza/helix/internal/component/mcp/client]: the mcp:// component
//     (producer-only), which calls tools of other MCP servers from a workflow.
//   - [github.com/arvenza/helix/internal/component/mcp/transport]: Helix's Streamable
//     HTTP transport with its tools/call fast path, SSE and session handling,
//     stdio, and JSON-RPC decoding.
//   - [github.com/arvenza/helix/internal/component/mcp/security]: the HTTP security
//     stack of a server (API keys, OAuth, CORS, rate limits, tool filters).
//
// Everything is built on the official SDK, github.com/modelcontextprotocol/go-sdk.
package mcp
