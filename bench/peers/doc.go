// Package peers holds the servers that Helix is measured against side by side
// (scripts/bench-side-by-side.sh, BENCHMARKS.md). Each answers MCP over
// Streamable HTTP with one tool, echo, that returns its text argument:
//
//   - limit: a plain net/http JSON-RPC handler, the least work any MCP server can do
//     per call (decode the request, encode the answer); the 1.00 of the ratios.
//   - gosdk: the official go-sdk v1.8.0 with stock options, what Helix builds on.
//   - mcpgo: mark3labs/mcp-go v1.2.1 with stock options.
//   - gosdkconn: an experiment, not a complete transport — the go-sdk's session
//     layer behind a minimal Streamable HTTP front implementing the SDK's public
//     Transport/Connection interfaces, to measure what that proposal would gain.
//
// They live in their own Go module so that mcp-go never becomes a dependency of
// Helix itself. Every peer also serves expvar at /debug/vars, from which the load
// tool reads allocations per call.
package peers
