// Package gateway lets one Helix MCP server front third-party MCP servers
// (upstreams): their tools, resources, prompts and completions are served
// beside Helix's own workflows, under prefixes, through virtual servers per
// audience, with policies, audit and credentials of the gateway's own.
//
// This file is the contract between the gateway's parts:
//
//   - internal/gateway (the core): discovery, prefixes, the relay of every
//     request and notification between a downstream session and its upstream
//     session, and the MCP server's hook;
//   - internal/gateway/upstream: connections to upstreams (http, sse, stdio),
//     session sharing, health checks, failover, retries;
//   - internal/gateway/policy: Guard;
//   - internal/gateway/audit: Auditor;
//   - internal/gateway/creds: Credentials.
package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Kind is what a served name names.
type Kind string

// Kinds of primitives the gateway serves.
const (
	KindTool     Kind = "tool"
	KindPrompt   Kind = "prompt"
	KindResource Kind = "resource" // named by URI
)

// Methods the gateway relays and records (Call.Method).
const (
	MethodCallTool     = "tools/call"
	MethodGetPrompt    = "prompts/get"
	MethodReadResource = "resources/read"
	MethodComplete     = "completion/complete"
)

// Principal is who a call acts for, as the server's security stack
// authenticated them.
type Principal struct {
	// ID is security.PrincipalFromContext: "key#<n>", "sub:…" or "" (anonymous).
	ID string
	// Name is what policies match: an API key's name, an OAuth token's subject;
	// "" for an anonymous caller.
	Name string
	// Roles and Scopes come from the API key's entry or the token's claims.
	Roles  []string
	Scopes []string
	// Token is the caller's bearer token (for passthrough and exchange). It is a
	// secret: never log it, never put it in an error or a record.
	Token string
}

// principalKey is the context key of the call's Principal.
type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the Principal of ctx; nil when none was put there.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// Call is one request through the gateway, as policies and audit see it.
type Call struct {
	// ID is unique per call (audit records are keyed by it, so that a record
	// delivered twice is stored once).
	ID string
	// Server is the gateway server's id, Audience the virtual server's path (""
	// for the server's own path).
	Server   string
	Audience string
	// Principal is who calls; never nil (an anonymous caller has empty fields).
	Principal *Principal
	// Upstream is the upstream's id; "" for Helix's own tools.
	Upstream string
	// UpstreamSession is the upstream's session id ("" for stdio and sessionless upstreams).
	UpstreamSession string
	// Method is one of the Method constants; Kind what Name names.
	Method string
	Kind   Kind
	// Name is the served (prefixed) name or the resource URI; UpstreamName the
	// upstream's own.
	Name         string
	UpstreamName string
	// Arguments are the call's arguments as JSON (tools/call: the arguments
	// object; prompts/get: the string map; completion: the argument). An
	// argument guard may replace them.
	Arguments json.RawMessage
	// Started is when the gateway received the call.
	Started time.Time
}

// Refusal is a call a policy refused: the client is told Message (a tool call
// gets it as an error result, other methods as a JSON-RPC error with Code).
// Reason is the audit outcome: one of the Outcome constants.
type Refusal struct {
	Code    int64
	Message string
	Reason  string
	// RetryAfter, for rate limits and quotas, is when the caller may try again.
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return r.Message }

// Guard is the policy of one gateway server (internal/gateway/policy).
// Methods are safe for concurrent use.
type Guard interface {
	// Visible says whether p may see the named primitive in a listing. A tool
	// p may not call is hidden, so that listings show what p can use.
	Visible(ctx context.Context, p *Principal, kind Kind, name string) bool
	// Before runs before the upstream is called: allow/deny, rate limits and
	// quotas, the argument guard (which may set c.Arguments). A refusal is a
	// *Refusal.
	Before(ctx context.Context, c *Call) error
	// WantsResult reports whether After must see the call's result; false lets
	// the relay skip encoding it.
	WantsResult(c *Call) bool
	// After checks the upstream's result (the JSON of the result object):
	// output guards may rewrite or redact it; max_result_bytes refuses it.
	After(ctx context.Context, c *Call, result json.RawMessage) (json.RawMessage, error)
	// Timeout is the call's deadline; 0 leaves the upstream's timeout.
	Timeout(c *Call) time.Duration
}

// Audit outcomes (Record.Outcome).
const (
	OutcomeOK          = "ok"
	OutcomeToolError   = "tool_error"   // the upstream answered isError: true
	OutcomeDenied      = "denied"       // a policy refused the call
	OutcomeRateLimited = "rate_limited" // a rate limit or quota refused it
	OutcomeGuard       = "guard"        // an argument or output guard refused it
	OutcomeError       = "error"        // the upstream answered a JSON-RPC error or could not be reached
	OutcomeTimeout     = "timeout"
	OutcomeCancelled   = "cancelled" // the client cancelled it
	// OutcomeInputRequired: the call stopped on a question (elicitation,
	// sampling, roots) its 2026-07-28 client has yet to answer; the client was
	// answered with the question and calls again with the answer, which is
	// audited as a call of its own.
	OutcomeInputRequired = "input_required"
)

// Record is one audited call.
type Record struct {
	ID              string    `json:"id"`
	Time            time.Time `json:"time"`
	Server          string    `json:"server"`
	Audience        string    `json:"audience,omitempty"`
	Principal       string    `json:"principal"` // Principal.Name, else ID, else "anonymous"
	Upstream        string    `json:"upstream,omitempty"`
	UpstreamSession string    `json:"upstream_session,omitempty"`
	Method          string    `json:"method"`
	Name            string    `json:"name"`
	// Arguments as the audit's arguments: setting says (redacted or full);
	// ArgumentsDigest is the SHA-256 (hex) of the arguments as received.
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ArgumentsDigest string          `json:"arguments_digest,omitempty"`
	Outcome         string          `json:"outcome"`
	Error           string          `json:"error,omitempty"`
	LatencyMS       float64         `json:"latency_ms"`
	ResultBytes     int             `json:"result_bytes,omitempty"`
}

// Auditor records calls (internal/gateway/audit). Record never blocks the
// call for the sink's sake beyond a bounded queue; a record is kept (in the
// queue, then in a spool file) until the sink acknowledges it, so a sink that
// is down or killed loses nothing; Close flushes (spooling what the sink did
// not take before ctx ends, replayed at the next start).
type Auditor interface {
	Record(ctx context.Context, r *Record)
	Close(ctx context.Context) error
}

// Credentials decides how the gateway authenticates to one upstream on behalf
// of a caller (internal/gateway/creds). The upstream's tokens never reach the
// client: they live only in the headers Header returns.
type Credentials interface {
	// Header returns the headers to send to the upstream for p (Authorization
	// and the like); an error refuses the call (a *Refusal for a caller whose
	// token may not be passed through or exchanged).
	Header(ctx context.Context, p *Principal) (http.Header, error)
	// SessionKey is what upstream sessions are shared by for p: "" when every
	// caller may share one (gateway credentials), else a key that differs for
	// callers whose credentials differ (never the token itself).
	SessionKey(p *Principal) string
}

// SessionKey says which upstream session serves a request. Two requests with
// equal keys share a session (and, for stdio upstreams, a process).
type SessionKey struct {
	// Downstream is the downstream session's id under per-client sharing; ""
	// means the upstream's shared session (shared sharing, and sessionless
	// 2026-07-28 calls under per-client).
	Downstream string
	// Principal is Credentials.SessionKey of the caller, or under per-principal
	// sharing the caller's Principal.ID; "" when callers may share.
	Principal string
}

// headerKey is the context key of the headers a request to an upstream carries.
type headerKey struct{}

// WithUpstreamHeader returns ctx carrying h: the upstream package's HTTP
// transport adds h to every HTTP request made with that context, so that a
// call carries its caller's credentials (Credentials.Header) on a session
// opened by someone else with the same SessionKey.
func WithUpstreamHeader(ctx context.Context, h http.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, headerKey{}, h)
}

// UpstreamHeader returns the headers WithUpstreamHeader put in ctx; nil when none.
func UpstreamHeader(ctx context.Context) http.Header {
	h, _ := ctx.Value(headerKey{}).(http.Header)
	return h
}
