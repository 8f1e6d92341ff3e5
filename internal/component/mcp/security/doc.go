// Package security is the HTTP security stack that guards one Helix MCP
// server: request body limit, CORS, client identity behind trusted proxies,
// API-key or OAuth 2.1 (JWT bearer) authentication, per-client rate limiting
// and allowed/blocked tool filtering.
//
// Every configured MCP server builds its own [Stack] with [New]; stacks share
// nothing, so two servers on two ports have independent keys, limits, CORS
// origins and tool lists (spec §15). The stack is transport-level: it runs as
// plain net/http middleware in front of the go-sdk Streamable HTTP or SSE
// handler, before any MCP message is parsed.
//
// Wiring, for a server built on the go-sdk:
//
//	stack, err := security.New(cfg)          // once per server; stack.Close() on shutdown
//	handler = stack.Middleware(handler)      // HTTP layer
//	err = stack.ToolAllowed(name, ctx)       // tools/list filtering and tools/call refusal
//
// A request passes the layers in this order, each answering on its own when it
// rejects:
//
//  0. DNS-rebinding guard: on a loopback listener a non-loopback Host is
//     refused (403), except from trusted proxies;
//  1. body limit by Content-Length (413), the body is wrapped in
//     [http.MaxBytesReader];
//  2. OAuth protected-resource metadata (public, when OAuth is configured);
//  3. CORS (preflight from an unlisted origin → 403, listed → 204);
//  4. authentication: API key or JWT (401), skipped for trusted proxies; a
//     client address with too many recent failures gets 429 with Retry-After
//     before its credentials are checked (Config.AuthFailureLimit);
//  5. rate limit per client (429 with Retry-After); IPv6 addresses count per /64;
//     with Config.RateLimitStore the buckets are shared in Redis (redislimit),
//     and a store that cannot answer is replaced by the process's own buckets
//     or answered 503 (Config.RateLimitStoreFallback);
//  6. the body is read into memory up to the limit (413 when larger), so the
//     MCP handler never sees a partial body and an oversize chunked body is
//     refused before any MCP handling.
//
// The body is buffered only after authentication and rate limiting on purpose:
// an anonymous client cannot make the server read megabytes before it is
// turned away.
package security
