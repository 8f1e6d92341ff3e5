package config

import "time"

// The gateway part of an MCP server entry (helix.mcp.servers or mcps:): the
// third-party MCP servers it fronts (upstreams:), the virtual servers it serves
// them through (audiences:), who may call what (policies:) and where every call
// is recorded (audit:). internal/gateway serves it; docs/gateway.md describes it.
//
//	mcps:
//	  - id: gateway
//	    addr: "0.0.0.0:8080"
//	    expose: [triage]                 # Helix's own tools, merged with the upstreams'
//	    upstreams:
//	      - id: github
//	        url: https://mcp.example.com/mcp   # Streamable HTTP (transport: sse for SSE)
//	        replicas: [https://mcp-b.example.com/mcp]
//	        prefix: "github."            # default "<id>."; "" keeps the upstream's names
//	        sessions: per-client         # per-client | shared | per-principal
//	        include: ["*"]               # globs over the upstream's own names
//	        exclude: [delete_*]
//	        headers: { X-Team: support }
//	        auth: { type: bearer, token: "${env:GITHUB_TOKEN}" }   # the mcp:// target auth block
//	        credentials: gateway         # gateway | passthrough | exchange
//	        audience: https://mcp.example.com   # passthrough: the caller's token must name it
//	        token_exchange: { token_url: …, client_id: …, client_secret: …, audience: …, scopes: [] }
//	        timeout: 30s
//	        health: { interval: 15s, timeout: 5s }
//	      - id: files
//	        command: npx                 # stdio upstream
//	        args: [-y, "@modelcontextprotocol/server-filesystem", /srv]
//	        env: { LOG_LEVEL: warn }
//	    audiences:
//	      - { path: /mcp/support, tools: ["github.*", triage] }
//	      - { path: /mcp/admin,   tools: ["*"] }
//	    policies:
//	      - tools: ["github.*"]
//	        allow: { principals: [alice], roles: [support], scopes: [tickets:write] }
//	        deny:  { principals: [mallory] }
//	        arguments: |                 # Starlang argument guard
//	          if "password" in args: reject("no passwords in tickets")
//	        result: |                    # Starlang output guard
//	          result = redact(result, r"\b\d{3}-\d{2}-\d{4}\b")
//	        rate: 10/s                   # per principal and tool
//	        quota: 1000/day
//	        max_result_bytes: 1MiB
//	        timeout: 10s
//	    audit:
//	      sink: file:///var/log/helix/audit.jsonl   # log | file:///… | kafka://… | postgres://…
//	      arguments: digest              # digest | redacted | full | none
//	      max_file_bytes: 100MiB
//	      keep_files: 10

// GatewayConfig is the gateway part of one MCP server entry; nil when the entry
// has no upstreams:, audiences:, policies: or audit: key.
type GatewayConfig struct {
	Upstreams []UpstreamConfig
	Audiences []AudienceConfig
	Policies  []PolicyConfig
	Audit     *AuditConfig
}

// Session sharing modes of an upstream (UpstreamConfig.Sessions).
const (
	// SessionsPerClient opens one upstream session per downstream session (and one
	// shared session for sessionless 2026-07-28 calls): the default for http and sse.
	SessionsPerClient = "per-client"
	// SessionsShared multiplexes every downstream session onto one upstream
	// session: the default for stdio (one process).
	SessionsShared = "shared"
	// SessionsPerPrincipal opens one upstream session (for stdio: one process) per
	// authenticated principal; required with credentials: passthrough or exchange.
	SessionsPerPrincipal = "per-principal"
)

// Credential modes of an upstream (UpstreamConfig.Credentials).
const (
	// CredentialsGateway: the gateway's own credentials for the upstream (auth:), the default.
	CredentialsGateway = "gateway"
	// CredentialsPassthrough: the caller's bearer token, only when it names the
	// upstream's audience.
	CredentialsPassthrough = "passthrough"
	// CredentialsExchange: the caller's token exchanged for one of the upstream
	// (RFC 8693 token exchange).
	CredentialsExchange = "exchange"
)

// UpstreamConfig is one entry of upstreams:.
type UpstreamConfig struct {
	ID string
	// URL is the upstream's MCP endpoint (http or https) for transports http and
	// sse; Replicas are more endpoints of the same server, tried in order when
	// the one in use fails its health check or refuses a connection.
	URL      string
	Replicas []string
	// Transport is http, sse or stdio; "" means stdio when Command is set, else http.
	Transport string
	// Command, Args and Env start a stdio upstream.
	Command string
	Args    []string
	Env     map[string]string
	// Prefix is put before every tool and prompt name of the upstream; nil means
	// ID + ".", "" keeps the upstream's names.
	Prefix *string
	// Sessions is SessionsPerClient, SessionsShared or SessionsPerPrincipal; ""
	// means the transport's default.
	Sessions string
	// Include and Exclude are globs (path.Match) over the upstream's own tool and
	// prompt names; empty Include means all.
	Include []string
	Exclude []string
	// Headers are sent with every HTTP request to the upstream.
	Headers map[string]string
	// Auth is the auth: block of an mcp:// target, decoded by pkg/app's decoder of
	// that block (kept as the YAML node's values: see AuthNode).
	Auth *UpstreamAuth
	// Credentials is CredentialsGateway ("" too), CredentialsPassthrough or
	// CredentialsExchange; Audience is what a passed-through token must name and
	// what an exchange asks for when TokenExchange.Audience is empty.
	Credentials   string
	Audience      string
	TokenExchange *TokenExchangeConfig
	// Timeout bounds one request to the upstream; 0 means the default (60s).
	Timeout time.Duration
	Health  HealthConfig
	Pos     Pos
	// Path is the entry's YAML path: mcps[0].upstreams[1].
	Path string
}

// UpstreamAuth is an upstream's auth: block, the same keys as an mcp:// target's
// (type bearer | api_key | oauth2 | mtls and their fields); pkg/app turns it into
// the client's AuthConfig with the target decoder's checks.
type UpstreamAuth struct {
	Values map[string]any
	Pos    Pos
}

// TokenExchangeConfig is token_exchange: of an upstream (RFC 8693).
type TokenExchangeConfig struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	Audience     string
	Resource     string
	Scopes       []string
	Pos          Pos
}

// HealthConfig is health: of an upstream: a ping every Interval (0: the default,
// 15s; negative: no health checks), failing after Timeout (0: 5s).
type HealthConfig struct {
	Interval time.Duration
	Timeout  time.Duration
}

// AudienceConfig is one virtual server: the gateway's primitives whose served
// names match Tools (globs; tools and prompts) served at Path on the same
// listener, with sessions of their own.
type AudienceConfig struct {
	Path  string
	Tools []string
	Pos   Pos
}

// PolicyConfig is one entry of policies:. Every policy whose Tools match a call
// applies, in order; a deny anywhere wins, and when any matching policy has an
// allow: the caller must satisfy one of them.
type PolicyConfig struct {
	// Tools are globs over served names (tools, prompts; resources by URI).
	Tools []string
	Allow *PrincipalMatch
	Deny  *PrincipalMatch
	// Arguments and Result are Starlang guards (see internal/gateway/policy).
	Arguments    string
	ArgumentsPos Pos
	Result       string
	ResultPos    Pos
	// Rate is "<n>/<s|m|h>" per principal and tool; Quota "<n>/<minute|hour|day>".
	Rate           string
	Quota          string
	MaxResultBytes int64
	Timeout        time.Duration
	Pos            Pos
	Path           string
}

// PrincipalMatch matches callers: any listed principal name, role or scope.
type PrincipalMatch struct {
	Principals []string
	Roles      []string
	Scopes     []string
}

// AuditConfig is audit: of a gateway server.
type AuditConfig struct {
	// Sink is log, file:///path, kafka://… or postgres://… (an endpoint URI of
	// those components; Helix's components write the records).
	Sink string
	// Arguments is digest (the default), redacted, full or none.
	Arguments string
	// MaxFileBytes and KeepFiles rotate a file sink (defaults 100 MiB, 10 files).
	MaxFileBytes int64
	KeepFiles    int
	Pos          Pos
}
