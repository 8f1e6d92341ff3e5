// Package mcppage is the console's MCP page (/mcp): every MCP server of the
// application with its transport, address, auth kind, sessions, counters and
// tools (schemas, annotations), a gateway's upstreams with their health,
// audiences, policies and audit, and a try-it form per tool that calls the
// tool through the server's own listener and shows the raw JSON-RPC.
//
// The page reads the application through [Source], which pkg/app implements
// (console_mcp.go).
package mcppage

import (
	"encoding/json"
	"time"
)

// Source is what the page reads of the application. Every method returns a
// copy, bounded, and never waits on a call in flight.
type Source interface {
	// Servers lists the MCP servers, sorted by id.
	Servers() []Server
	// Sessions returns up to max open sessions of server, newest first, and
	// how many are open.
	Sessions(server string, max int) ([]Session, int)
}

// Server is one MCP server of the application.
type Server struct {
	ID, Name, Version string
	// Transport is http, sse or stdio.
	Transport string
	// URL is where clients reach it ("" for stdio); CallURL where the try-it
	// form posts (the same listener, reached over loopback when it listens on
	// every address).
	URL, CallURL string
	Running      bool
	Stateless    bool
	// Auth says how callers authenticate, never with what: "none",
	// "API keys (2)", "OAuth (issuer …)", "API keys (1) or OAuth …".
	Auth      string
	Tools     []Tool
	Resources int
	Prompts   int
	// Calls and Errors are the tool-call counters /metrics reads, summed over
	// the tools; Rejected the security stack's refusals by reason.
	Calls, Errors uint64
	Rejected      []Count
	// Admission is the admission control's counters (the ones /metrics reads);
	// nil when the server has none or is not running.
	Admission *Admission
	// Where is the YAML position of the server's entry (file:line).
	Where   string
	Gateway *Gateway
}

// Admission are the admission-control counters of a running server.
type Admission struct {
	Limit, Running, Waiting   int
	Admitted, Queued, Refused uint64
}

// Count is a labelled counter.
type Count struct {
	Name  string
	Count uint64
}

// Tool is one tool a server exposes.
type Tool struct {
	Name        string
	Workflow    string // the workflow, tool or agent behind it; "" for an upstream's
	Kind        string // workflow, tool, agent, pipeline, upstream
	Description string
	Input       json.RawMessage
	Output      json.RawMessage
	Annotations []string // "read-only", "destructive" …, as words
	Calls       uint64
	Errors      uint64
	// Upstream is the gateway upstream that serves it ("" for Helix's own).
	Upstream string
}

// Session is one open session of a server.
type Session struct {
	ID, Transport, Protocol, Client string
	Opened                          time.Time
	InFlight                        int
}

// Gateway is the gateway part of a server with upstreams:.
type Gateway struct {
	Upstreams []Upstream
	Audiences []Audience
	Policies  []Policy
	Audit     *Audit
}

// Upstream is one upstream of a gateway.
type Upstream struct {
	ID        string
	Transport string
	// URL is the endpoint with credentials and query values masked (for
	// stdio: the command).
	URL string
	// Sessions is the session sharing mode: per-client, shared, per-principal.
	Sessions string
	Prefix   string
	// Health is "healthy", "unhealthy" or "unknown" (not checked yet).
	Health    string
	LastCheck time.Time
	LastError string
	Protocol  string
	Open      int // upstream sessions open now
	Replicas  []Replica
	// Tools are the served (prefixed) names with the upstream's own.
	Tools []UpstreamTool
	Where string
}

// Replica is one endpoint of an upstream (its url: first, then replicas:).
type Replica struct {
	URL, Health, LastError string
	LastCheck              time.Time
}

// UpstreamTool is one tool an upstream contributes.
type UpstreamTool struct{ Served, Own string }

// Audience is a virtual server: a path and the tools it serves.
type Audience struct {
	Path  string
	Tools []string
	Where string
}

// Policy is one entry of policies:, as written.
type Policy struct {
	Where     string
	Tools     []string
	Allow     string
	Deny      string
	Arguments string
	Result    string
	Rate      string
	Quota     string
	MaxResult int64
	Timeout   time.Duration
}

// Audit is a gateway's audit sink and its counters.
type Audit struct {
	// Sink is the sink URI with credentials masked.
	Sink, Arguments           string
	Written, Retried, Spooled uint64
	Where                     string
}
