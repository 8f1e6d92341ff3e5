// Package mcp connects Helix to the Model Context Protocol, on both sides.
//
// The server side (scheme mcp-server, [NewServer]) exposes the workflows of an
// engine context as MCP tools: each exposed workflow with a trigger becomes one
// tool whose name is the workflow id with '.', '-' and '/' replaced by '_'
// ([SanitizeToolName]). A call creates an InOut exchange whose body is the call's
// arguments, runs it through the workflow's whole pipeline (interceptors and error
// handler included) with [engine.Context.Run], and answers with the reply body as
// text. A failing or panicking workflow yields a result with isError set, never a
// protocol error, so the model sees the message and the server keeps serving.
// Every server also offers the resource helix://workflows (alias helix://routes)
// listing the context's workflows.
//
// Servers are declared three ways, all ending in the same code: a workflow whose
// trigger is mcp-server://host:port?transport=http&name=…&version=… (started and
// stopped with that workflow), [ServerComponent.AddServer] (what helix.yaml's
// helix.mcp.servers and mcps: entries turn into; started with the context), and
// [NewSDKServer] for embedding the tools into a go-sdk server on any transport.
// Transports: Streamable HTTP at /mcp and / (stateful sessions by default,
// stateless on request), the 2024-11-05 SSE transport at /sse + /message, and stdio.
//
// The client side (scheme mcp, producer-only) calls tools of other MCP servers
// from a workflow; it lives in client*.go, auth*.go and body*.go.
//
// Everything is built on the official SDK, github.com/modelcontextprotocol/go-sdk.
package mcp
