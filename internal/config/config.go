// Package config loads Helix YAML files (helix.yaml) into a model that keeps the
// file:line:col of every element, so that every later error — a typo in a step, a bad
// URI, a Starlang syntax error — can say exactly where it is.
//
// Loading is strict and exhaustive: unknown keys, wrong types, missing required keys
// and duplicate ids are all collected and returned together as [Errors]. Step bodies
// are kept as raw YAML nodes ([StepConfig.Node]) and decoded by internal/step, which knows
// each step kind; [Decoder] is the strict decoder both use.
//
// Environment variables written ${env:NAME} are resolved at load time in every scalar
// except Starlang scripts (values of `starlang:` keys): substituting text into source
// code would let a variable's content change the program, and a script can read
// headers or use a constant step instead. A missing variable is an error naming it.
// Other placeholders (${body.x}, ${header.X}) are left for run time.
package config

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the merged content of one or more YAML files: lists are concatenated in
// file order and helix: settings are merged (later files override set values).
type Config struct {
	Helix     HelixConfig
	Workflows []WorkflowConfig
	Tools     []ToolConfig
	Agents    []AgentConfig
	Pipelines []PipelineConfig
	// MCPs are the entries of the top-level `mcps:` list; [Config.MCPServers]
	// lists them with helix.mcp.servers.
	MCPs []MCPServerConfig
	// Resources and Prompts are the entries of `resources:` and `prompts:`, which
	// the MCP servers offer (resources.go, prompts.go).
	Resources []ResourceConfig
	Prompts   []PromptConfig
	// Tests are the entries of `tests:`, run by `helix test` (tests.go).
	Tests []TestConfig
	// Files are the files loaded, in order.
	Files []string
	// Warnings are non-fatal findings (a workflow without trigger never runs …).
	Warnings Errors
	// DuplicateWorkflows and DuplicateTools are the entries dropped because their id
	// was already taken (an error). They are kept so that building can still check
	// their steps, and report those mistakes in the same run.
	DuplicateWorkflows []WorkflowConfig
	DuplicateTools     []ToolConfig
}

// HelixConfig is the top-level `helix:` block.
type HelixConfig struct {
	Name       string
	MCP        MCPSection
	Management ManagementConfig
	// Console is helix.console: the web console on the management listener
	// (console.go).
	Console  ConsoleConfig
	LogLevel string // helix.log_level: debug|info|warn|error
	// StarlangMaxMemory is the allocation budget of one Starlang evaluation in bytes
	// (helix.starlang_max_memory: 64MiB, 128MB or plain bytes); 0 means the default.
	StarlangMaxMemory int64
	// ShutdownTimeout bounds the drain of in-flight exchanges and tool calls at
	// stop (helix.shutdown_timeout); 0 means the default (30s).
	ShutdownTimeout time.Duration
	// Modules holds the settings blocks of component modules (helix.kafka …) by
	// name, as each module's decoder returned them (see [ModuleSettings]).
	Modules map[string]any
	// DataDir is helix.data_dir: where Helix keeps what it stores on disk
	// (pipelines' embedded stores); "" means DefaultDataDir.
	DataDir string
	// Durable is helix.durable: every workflow, tool and agent is durable.
	Durable bool
	// DurableStore is helix.durable_store: the PostgreSQL URL of the store
	// replicas share; "" means the embedded store under DataDir.
	DurableStore string
	// ReplicaID is helix.replica_id: which replica this is, for the runs it
	// recovers; "" means the host name.
	ReplicaID string
	// DurableMaxCheckpoint is helix.durable_max_checkpoint in bytes: the
	// largest checkpoint of one step; 0 means the default (4MiB).
	DurableMaxCheckpoint int64
	// DurablePos is where the helix durable keys are, for messages.
	DurablePos Pos
	// Cluster is helix.cluster: leader election among replicas (cluster.go).
	Cluster ClusterConfig
	// Tracing is helix.tracing: OpenTelemetry tracing (tracing.go).
	Tracing TracingConfig
	// Callbacks is helix.callbacks: the links that resolve waits (callbacks.go).
	Callbacks CallbacksConfig
}

// MCPSection is `helix.mcp`.
type MCPSection struct {
	// Servers are the entries of helix.mcp.servers, enabled or not;
	// [Config.MCPServers] lists the enabled ones with mcps:.
	Servers []MCPServerConfig
	// ReplayBudget is helix.mcp.replay_budget: the bytes of events the resumable
	// streams of all MCP sessions of the process may keep for replay; 0 is the
	// default (transport.DefaultReplayBudget, 64 MiB).
	ReplayBudget int64
}

// ManagementConfig is `helix.management`: the address of the manifest, health and
// metrics endpoints. Enabled nil means "default" (on); Required makes a taken address
// fatal instead of a warning.
type ManagementConfig struct {
	Addr     string
	Enabled  *bool
	Required bool
	// Listener holds the connection limits of the management listener.
	Listener ListenerLimits
	Pos      Pos
}

// ListenerLimits are the connection settings of one HTTP listener (an MCP
// server, the management server): read_timeout, idle_timeout, write_timeout,
// max_connections and max_connections_per_ip. Zero means the default
// (internal/netguard); negative (written `off` or -1) switches the limit off.
type ListenerLimits struct {
	ReadTimeout         time.Duration
	IdleTimeout         time.Duration
	WriteTimeout        time.Duration
	MaxConnections      int
	MaxConnectionsPerIP int
}

// MCPServerConfig is one MCP server, declared as an entry of `helix.mcp.servers` or
// of the top-level `mcps:` list. Both lists decode into this one model with one
// decoder and take the same keys, except where the spec writes them differently:
//
//   - an `mcps:` entry needs `id`; a `helix.mcp.servers` entry may give one;
//   - a `helix.mcp.servers` entry runs only with `enabled: true` (spec §5.1); an
//     `mcps:` entry always runs and takes no `enabled`;
//   - `helix.mcp.servers` also takes `workflows:`, the spec's name there for
//     `expose`, where an empty list means all (spec §5.1).
//
// [Config.MCPServers] is the one list of servers to build, from both.
type MCPServerConfig struct {
	// ID names the server in logs, metrics and errors (`id`; required in mcps:).
	// [Config.MCPServers] fills it in when it was not written.
	ID string
	// Enabled switches a helix.mcp.servers entry on; mcps: entries ignore it.
	Enabled   bool
	Transport string // http | sse | stdio ("" means http)
	Addr      string
	Name      string
	Version   string
	// Expose lists the ids of the workflows, tools, agents and pipelines offered
	// as tools: nil offers all, an empty non-nil list none (`expose: []`).
	Expose []string
	// Tools overrides tool metadata per workflow id.
	Tools map[string]ToolOverride
	// Stateless serves Streamable HTTP without sessions (any replica answers any request).
	Stateless          bool
	SessionIdleTimeout time.Duration
	// HTTPTransport picks the Streamable HTTP implementation: helix (default) or sdk
	// (the go-sdk's stock handler); "" means the default.
	HTTPTransport string
	// FastToolCalls is `fast_tool_calls` (URI option fastToolCalls): whether
	// Helix's own transport answers a plain tools/call itself instead of through
	// the go-sdk session (helix transport only). nil means the default, on; read
	// it with [MCPServerConfig.FastToolCallsOn].
	FastToolCalls *bool
	// DisableFastToolCalls is the former spelling of FastToolCalls = false, still
	// honoured when FastToolCalls is nil.
	//
	// Deprecated: set FastToolCalls.
	DisableFastToolCalls bool
	SessionLimits
	Security
	// RequestState is request_state: the sealed requestState of MCP 2026-07-28
	// input-required results; nil means the defaults (a random per-process key).
	RequestState *RequestStateConfig
	// Gateway is the entry's gateway part (upstreams:, audiences:, policies:,
	// audit:; see gateway.go); nil when it has none.
	Gateway *GatewayConfig
	Pos     Pos
	// Path is the entry's YAML path in its file: helix.mcp.servers[0] or mcps[1].
	Path string
}

// RequestStateConfig is `request_state:` of an MCP server.
type RequestStateConfig struct {
	// Key is the AES-256 key, 32 bytes written as base64 or 64 hex digits (checked
	// at load time; decode it with [DecodeRequestStateKey]). A secret: write it as
	// ${env:NAME} and never log it. "" means a random key per process.
	Key string
	// TTL is how long a state can be used; 0 means the default (10m).
	TTL time.Duration
	// Store is the redis:// or rediss:// URL of the Redis in which replicas
	// remember used states; "" means each process remembers its own. It may hold
	// a password: never log it.
	Store string
	Pos   Pos
}

// RequestStateKeySize is the size of a request_state key (AES-256).
const RequestStateKeySize = 32

// DecodeRequestStateKey decodes a request_state key: base64 (standard or URL
// alphabet, padded or not) or hex, of RequestStateKeySize bytes.
func DecodeRequestStateKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*RequestStateKeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != RequestStateKeySize {
				return nil, fmt.Errorf("the key decodes to %d bytes, not %d", len(k), RequestStateKeySize)
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("the key is neither %d bytes written as base64 nor %d hex digits", RequestStateKeySize, 2*RequestStateKeySize)
}

// MCPConfig is the former type of `mcps:` entries, now the same as
// `helix.mcp.servers` entries. Expose nil means everything (there is no ExposeSet).
//
// Deprecated: use [MCPServerConfig].
type MCPConfig = MCPServerConfig

// FastToolCallsOn reports whether the tools/call fast path is on: FastToolCalls
// when set, else on unless the deprecated DisableFastToolCalls is set.
func (s *MCPServerConfig) FastToolCallsOn() bool {
	if s.FastToolCalls != nil {
		return *s.FastToolCalls
	}
	return !s.DisableFastToolCalls
}

// ToolOverride replaces a workflow's MCP description and/or input schema. InputSchema
// is JSON text, checked to be a JSON object at load time.
type ToolOverride struct {
	Description string
	InputSchema string
	// Task is whether the server runs the tool as an MCP task: "optional",
	// "required" or "forbidden"; empty: optional when the workflow is durable.
	Task string
	Pos  Pos
}

// SessionLimits are `max_sessions` and `max_sessions_per_principal` of one MCP
// server (shared by helix.mcp.servers and mcps): 0 means the default (10,000 and
// 1,000), -1 no limit.
type SessionLimits struct {
	MaxSessions             int
	MaxSessionsPerPrincipal int
	// MaxConcurrentCalls is max_concurrent_calls: the requests of one session
	// running at once (0 the default, 64; -1 no limit).
	MaxConcurrentCalls int
	// Admission is `admission:`, the server-wide admission control; nil: none.
	Admission *AdmissionConfig
}

// AdmissionConfig is `admission:` of an MCP server: at most MaxRunning requests
// of the whole server run at once, Queue more wait at most QueueTimeout, the
// rest are refused (503 + Retry-After, JSON-RPC -32030 server busy).
type AdmissionConfig struct {
	// MaxRunning is max_running: a number of requests, or 0 for auto (written
	// `auto`: an adaptive limit, transport.AdmissionOptions.Adaptive).
	MaxRunning int
	// Queue is queue: requests waiting for a slot; 0 the default (max_running),
	// -1 none.
	Queue int
	// QueueTimeout is queue_timeout: the longest wait; 0 the default (50ms).
	QueueTimeout time.Duration
	Pos          Pos
}

// Security is the HTTP protection of one MCP server (shared by helix.mcp.servers and mcps).
type Security struct {
	APIKeys []string
	// APIKeyPrincipals name the caller of each key (same index as APIKeys): an
	// api_keys entry written as a mapping {key, name, roles}; zero for a plain
	// string. Gateway policies match these names and roles.
	APIKeyPrincipals []APIKeyPrincipal
	TrustedProxies   []string
	RateLimit        int // requests per minute per client; 0 = unlimited
	// RateLimitStore is rate_limit_store: the redis:// or rediss:// URL of the Redis
	// that replicas share their rate-limit buckets in (its shape is checked at load
	// time); "" means each process limits alone. It may hold a password: never log it.
	RateLimitStore    string
	RateLimitStorePos Pos
	// RateLimitStoreFallback is rate_limit_store_fallback, what decides a request
	// while the store cannot: "local" (the default, "" too: this process's own
	// buckets) or "refuse" (503).
	RateLimitStoreFallback string
	// AuthFailureLimit is auth_failure_limit: failed authentications per client
	// address (IPv6: per /64) within AuthFailureWindow before 429; 0 means the
	// default (10), -1 no limit.
	AuthFailureLimit int
	// AuthFailureWindow is auth_failure_window; 0 means the default (1m).
	AuthFailureWindow time.Duration
	// MaxBodyBytes limits request bodies: 0 means the default (4 MiB), -1 no limit.
	MaxBodyBytes int64
	CORSOrigins  []string
	AllowedTools []string
	BlockedTools []string
	Auth         *OAuthConfig
	// Listener holds the connection limits of the server's HTTP listener.
	Listener ListenerLimits
	// ProxyProtocol is proxy_protocol: connections from TrustedProxies start
	// with a PROXY protocol header naming the client (internal/netguard).
	ProxyProtocol bool
}

// OAuthConfig validates bearer JWTs (OAuth 2.1 resource server). Scopes maps a tool
// name (or "*") to the scopes a token needs to call it.
type OAuthConfig struct {
	Issuer   string
	Audience string
	JWKSURL  string
	Scopes   map[string][]string
	// ResourceURL is the server's public MCP URL announced in the protected-resource
	// metadata (and the default audience); empty means derived from each request.
	ResourceURL string
	// RolesClaim is roles_claim: the token claim that lists the caller's roles
	// (a list of strings or one space-separated string); "" means "roles".
	RolesClaim string
	Pos        Pos
}

// APIKeyPrincipal is who an API key stands for: the name and roles that gateway
// policies match (an api_keys entry {key, name, roles}).
type APIKeyPrincipal struct {
	Name  string
	Roles []string
}

// WorkflowConfig is one entry of `workflows:`.
type WorkflowConfig struct {
	ID          string
	Description string
	// From is the trigger URI (trigger: URI, trigger: {uri: URI} or from: URI); "" when
	// the workflow has no trigger.
	From string
	// FromRaw is the trigger URI as written, before ${env:…} was resolved: what
	// may be shown to MCP clients (helix://workflows) without leaking secrets.
	FromRaw string
	FromPos Pos
	// Input and Output are the workflow's `input:` and `output:` fields, written as
	// a tools: entry's: nil when the key is absent (any arguments, no declared
	// result). [WorkflowConfig.InputSchema] and OutputSchema give their schemas.
	Input        []FieldConfig
	Output       []FieldConfig
	InputPos     Pos // where input: and output: are (their values)
	OutputPos    Pos
	Steps        []StepConfig
	ErrorHandler *ErrorHandlerConfig
	// OnError is on_error: how the workflow's failures are answered.
	OnError *OnErrorConfig
	// Durable is durable: true: each step's result is checkpointed.
	Durable bool
	Pos     Pos
	// Path is the workflow's YAML path in its file, e.g. workflows[0].
	Path string
}

// OnErrorConfig is a workflow's `on_error:`.
type OnErrorConfig struct {
	// Status is `status: 503`: the HTTP status of every failure; 0 when not given.
	Status int
	// StatusByClass is `status: {conflict: 422, …}`: the HTTP status of the failures
	// of a class (exchange.FailureClasses); nil when not given.
	StatusByClass map[string]int
	Pos           Pos
}

// ErrorHandlerConfig is a workflow's `error_handler:` (formerly `error-handler:`).
type ErrorHandlerConfig struct {
	DeadLetterChannel string
	Default           *RedeliveryConfig
	Pos               Pos
}

// RedeliveryConfig is `error_handler.default`.
type RedeliveryConfig struct {
	MaximumRedeliveries    int
	RedeliveryDelay        time.Duration
	BackoffMultiplier      float64
	MaximumRedeliveryDelay time.Duration
	Pos                    Pos
}

// StepConfig is one step of a step list: its kind (the single key), where it is, and
// its raw value node, which the step's builder in internal/step decodes strictly.
type StepConfig struct {
	Kind string
	Pos  Pos
	// Path is the step's YAML path, e.g. workflows[0].steps[2].
	Path string
	Node *yaml.Node
}

// ToolConfig is one entry of `tools:`: a workflow with a guaranteed schema, triggered
// as tool://id.
type ToolConfig struct {
	ID          string
	Description string
	Input       []FieldConfig // ordered as in the YAML
	Output      []FieldConfig
	Steps       []StepConfig
	// Durable is durable: true: each step's result is checkpointed.
	Durable bool
	Pos     Pos
	// Path is the tool's YAML path in its file, e.g. tools[0].
	Path string
}

// FieldConfig is one input or output field of a tool.
type FieldConfig struct {
	Name        string
	Type        string // string | integer | number | boolean | array | object
	Description string
	Required    bool
	Default     any
	Enum        []any
	Items       *FieldConfig  // for arrays
	Properties  []FieldConfig // for objects
	Pos         Pos
}

// AgentConfig is one entry of `agents:`, or the value of an `agent:` step (then
// Ref names an `agents:` entry, or the fields define the agent inline and ID,
// Trigger are empty). The agent runtime (internal/agent/setup) builds from it; Pos and
// the *Pos fields let it report problems at the key that caused them.
type AgentConfig struct {
	ID          string
	Description string
	Type        string // "react" (the default and only type)
	Trigger     string
	TriggerPos  Pos
	// TriggerRaw is the trigger URI as written, before ${env:…} was resolved
	// (what may be shown to MCP clients, like WorkflowConfig.FromRaw).
	TriggerRaw string
	// Ref, set only in an `agent:` step, is the id of the `agents:` entry it runs.
	Ref          string
	Model        ModelConfig
	SystemPrompt string
	Tools        []AgentToolConfig
	// Loop settings; zero values mean the runtime's defaults.
	MaxIterations     int
	Timeout           time.Duration // the whole run
	ToolTimeout       time.Duration // each tool call
	ParallelToolCalls *bool         // nil: on
	// Bounds of one model turn's tool calls: how many run, how many at once, and
	// the bytes of each call's arguments and of its result.
	MaxToolCallsPerTurn  int
	MaxParallelToolCalls int
	MaxToolBytes         int64
	Stream               bool
	Memory               AgentMemoryConfig
	// Durable (agents: entries) is durable: true: each model turn and tool
	// result is checkpointed.
	Durable bool
	// Output, in an `agent:` step, is the JSON Schema the answer must match (the
	// step's output: fields); empty: the enclosing tool's output schema, if any.
	Output []FieldConfig
	// Path is the YAML path of the entry ("agents[0]", "tools[1].steps[0].agent").
	Path string
	Node *yaml.Node
	Pos  Pos
}

// AgentMemoryConfig is an agent's conversation memory per session_id.
type AgentMemoryConfig struct {
	Window      int   // messages kept per session
	MaxSessions int   // sessions kept; the least recently used is evicted
	MaxBytes    int64 // bytes of messages kept for all sessions together
}

// ModelConfig is an agent's `model:`.
type ModelConfig struct {
	Provider    string // openai | anthropic
	Model       string
	APIKey      string
	BaseURL     string
	Temperature *float64
	MaxTokens   int
	// Headers are sent with every request to the provider (a gateway's own headers).
	Headers map[string]string
	Node    *yaml.Node
	Pos     Pos
}

// AgentToolConfig is one entry of an agent's `tools:`. Type "mcp" reaches the
// tools of an MCP server (MCPServer, Auth); "workflow", "tool" and "agent" (and a
// plain string entry, Type "") name an entry of the application by id (Name).
type AgentToolConfig struct {
	Name        string
	Type        string
	Description string
	MCPServer   *AgentMCPServerConfig
	// Auth is the raw `auth:` mapping (resolved ${env:…}), parsed by the MCP client.
	Auth    map[string]any
	AuthPos Pos
	// Include and Exclude filter the tools of an MCP server by name (path.Match
	// patterns); empty Include means all.
	Include []string
	Exclude []string
	// OnElicit and OnSample say how the MCP server's questions are answered
	// (the mcp:// client's onElicit and onSample); "" refuses them.
	OnElicit, OnSample string
	OnSamplePos        Pos
	Path               string
	Node               *yaml.Node
	Pos                Pos
}

// AgentMCPServerConfig is the `mcp_server:` of an agent tool: url (http, sse) or
// command/args (stdio).
type AgentMCPServerConfig struct {
	URL       string
	Transport string // http | sse | stdio; "" means stdio with command, else http
	Command   string
	Args      []string
	Env       map[string]string
	Timeout   time.Duration // per call; 0: the client's default
	Pos       Pos
}
