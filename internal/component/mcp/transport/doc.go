// Package transport holds the wire side of Helix's MCP servers: its own Streamable
// HTTP transport (sessions by Mcp-Session-Id, JSON or event-stream answers, the
// tools/call fast path), the front it puts before the go-sdk's stock
// StreamableHTTPHandler (http_transport: sdk), the 2024-11-05 SSE transport's
// session handling, session limits, the stdio connection and its drain at EOF, and
// the JSON-RPC decoding they share (like the go-sdk's, from bytes).
//
// Everything here implements the go-sdk's public Transport/Connection interfaces or
// wraps its handlers, so the go-sdk's session layer (initialize, tools/list,
// schemas, logging) is used unchanged. What a tool is, and what calling one does,
// belongs to the server (package server): the fast path reaches it through
// [CallTool]. The package knows nothing of engines, workflows or configuration.
package transport

import (
	"log/slog"
	"net/http"
	"time"
)

// Transports of MCP servers and clients (ServerOptions.Transport, the client's
// ?transport= option).
const (
	// HTTP is Streamable HTTP (at /mcp and /, with SSE at /sse + /message beside it
	// on servers).
	HTTP = "http"
	// SSE is the 2024-11-05 HTTP+SSE transport only, at /sse + /message.
	SSE = "sse"
	// Stdio is newline-delimited JSON-RPC on stdin/stdout.
	Stdio = "stdio"
)

// Options configure the HTTP handlers of one server. The server builds them once
// from its own options; zero values mean defaults.
type Options struct {
	// Stateless serves Streamable HTTP without sessions: initialize opens none
	// (replicas behind a plain load balancer). Every server serves MCP 2026-07-28
	// requests without a session either way.
	Stateless bool
	// SessionIdleTimeout closes stateful sessions idle this long; <= 0 never.
	SessionIdleTimeout time.Duration
	// ParkIdleAfter parks the Streamable HTTP sessions idle about this long
	// (park.go): their go-sdk session is closed and connected again by their
	// next request, which the client does not notice. 0 is DefaultParkAfter,
	// negative never (a gateway's server: it keeps per-client state by go-sdk
	// session).
	ParkIdleAfter time.Duration
	// MaxRequestBodyBytes limits request bodies: 0 is the default (4 MiB, the
	// go-sdk's), negative is unlimited.
	MaxRequestBodyBytes int64
	// DisableLocalhostProtection switches off the DNS-rebinding check on loopback
	// listeners (the security stack does it itself, exempting trusted proxies).
	DisableLocalhostProtection bool
	// MaxSessions and MaxSessionsPerPrincipal cap the stateful sessions (negative:
	// no cap); see [NewSessionTable].
	MaxSessions             int
	MaxSessionsPerPrincipal int
	// Logger receives the transports' logs; nil discards them.
	Logger *slog.Logger

	// Sessions is the session table of the server's stateful transports, shared
	// by Streamable HTTP and SSE; nil gives the Streamable HTTP handler a table of
	// its own.
	Sessions *SessionTable
	// Fast answers plain tools/call requests in Helix's Streamable HTTP transport
	// (fastcall.go); nil sends every request through the go-sdk session.
	Fast *FastToolCalls
	// ReplayBudget bounds the event data the resumable streams of the Streamable
	// HTTP sessions keep (resume.go); nil is the process's (ProcessReplayBudget).
	ReplayBudget *ReplayBudget
	// MaxConcurrentCalls bounds the requests of one session (of one POST on a
	// stateless server) that run at once, whether they come in a batch or in
	// parallel POSTs; the others wait for a slot. 0 is DefaultMaxConcurrentCalls,
	// negative no bound.
	MaxConcurrentCalls int
	// Admission, when set, bounds the requests of the whole server running at
	// once, with a short queue (admission.go); the server's Streamable HTTP and
	// SSE handlers share it. nil: no bound beyond MaxConcurrentCalls per session.
	Admission *Admission
	// ChargeCalls, when set, takes n more rate-limit tokens for a POST the HTTP
	// middleware admitted (one token): the transport calls it for the calls of a
	// batch beyond the first, and refuses the batch with 429 (503 when err) when
	// it does not allow them.
	ChargeCalls func(r *http.Request, n int) (ok bool, retryAfter time.Duration, err error)
	// ParamHeaders returns the x-mcp-header bindings of the tool named name (see
	// ParamHeaders), which Helix's Streamable HTTP transport checks against the
	// Mcp-Param-* headers of a 2026-07-28 tools/call (SEP-2243); nil checks none.
	ParamHeaders func(tool string) []ParamHeader
	// Tasks serves the tasks surface (tasks/* and the tools/call of tools that
	// run as tasks) ahead of the go-sdk session (tasks.go); nil: none.
	Tasks Tasks
}
