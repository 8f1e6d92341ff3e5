package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/uri"
)

// Scheme is the URI scheme of the server component (mcp-server://).
const Scheme = "mcp-server"

// A server speaks one of the transports TransportHTTP (Streamable HTTP at /mcp and
// /, plus SSE at /sse + /message), TransportSSE (the 2024-11-05 HTTP+SSE transport
// only, at /sse + /message) or TransportStdio (newline-delimited JSON-RPC on
// stdin/stdout); the names are shared with the client side (package transport).
const (
	TransportHTTP  = transport.HTTP
	TransportSSE   = transport.SSE
	TransportStdio = transport.Stdio
)

// HTTP transport implementations selectable with Options.HTTPTransport.
const (
	// HTTPTransportHelix is Helix's own Streamable HTTP transport
	// (transport/streamable.go).
	HTTPTransportHelix = "helix"
	// HTTPTransportSDK is the go-sdk's stock StreamableHTTPHandler.
	HTTPTransportSDK = "sdk"
)

// Defaults of Options.MaxSessions and MaxSessionsPerPrincipal.
const (
	DefaultMaxSessions             = transport.DefaultMaxSessions
	DefaultMaxSessionsPerPrincipal = transport.DefaultMaxSessionsPerPrincipal
	// DefaultMaxConcurrentCalls is the default of Options.MaxConcurrentCalls.
	DefaultMaxConcurrentCalls = transport.DefaultMaxConcurrentCalls
)

// Defaults applied by [Component.AddServer] and mcp-server:// URIs.
const (
	DefaultServerName         = "helix-mcp"
	DefaultServerVersion      = "1.0.0"
	DefaultAddr               = "127.0.0.1:3000"
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultHTTPTransport is the Streamable HTTP implementation used when
	// Options.HTTPTransport is empty.
	DefaultHTTPTransport = HTTPTransportHelix
)

// Options declares one MCP server. Zero values mean defaults.
type Options struct {
	// ID names the server in listings and in [Component.Addr]; it must be
	// unique within the component. Defaults to Name.
	ID string
	// Name and Version are reported to clients (serverInfo); defaults helix-mcp, 1.0.0.
	Name    string
	Version string
	// Transport is http (default), sse or stdio.
	Transport string
	// Addr is the listen address for http and sse (host:port; port 0 picks a free
	// port, see [Component.Addr]). Defaults to DefaultAddr. Ignored for stdio.
	Addr string
	// Expose lists the ids of the workflows (tools, agents, pipelines) offered as
	// tools. nil exposes every workflow with a trigger except MCP servers themselves.
	Expose []string
	// Tools overrides descriptions and input schemas, keyed by workflow id.
	Tools map[string]ToolOverride
	// Stateless serves Streamable HTTP without sessions: every POST stands alone, so
	// any number of replicas can sit behind a plain load balancer (MCP 2026-07-28
	// clients). Server-to-client requests are then impossible.
	Stateless bool
	// HTTPTransport picks the Streamable HTTP implementation of transport http:
	// HTTPTransportHelix (default; Helix's own, see package transport) or HTTPTransportSDK
	// (the go-sdk's StreamableHTTPHandler, the fallback). The SSE transport is
	// always the go-sdk's.
	HTTPTransport string
	// FastToolCalls is the tools/call fast path switch, named as in YAML
	// (fast_tool_calls) and URIs (fastToolCalls); nil means on. By default Helix's own
	// transport answers a plain tools/call of an established session itself (same
	// tool handler, same answer, less allocation; see package transport); false
	// sends every tools/call through the go-sdk session, the switch back should a
	// difference ever matter. No effect with HTTPTransportSDK.
	FastToolCalls *bool
	// DisableFastToolCalls is the former spelling of FastToolCalls = false, still
	// honoured when FastToolCalls is nil.
	//
	// Deprecated: set FastToolCalls.
	DisableFastToolCalls bool
	// SessionIdleTimeout closes stateful sessions that saw no request for this long
	// (default 30m); negative keeps idle sessions forever.
	SessionIdleTimeout time.Duration
	// Limits are the HTTP listener's connection limits and timeouts
	// (read_timeout, idle_timeout, write_timeout, max_connections,
	// max_connections_per_ip); zero fields mean the netguard defaults.
	Limits netguard.Limits
	// Proxies are the load balancers in front of the listener (trusted_proxies,
	// proxy_protocol): not capped per address, and with the PROXY protocol the
	// client they name is (internal/netguard).
	Proxies netguard.ProxyOptions
	// MaxSessions caps the stateful sessions of the server (Streamable HTTP and
	// SSE together; default DefaultMaxSessions, negative: no cap), and
	// MaxSessionsPerPrincipal those of one API key or OAuth subject (default
	// DefaultMaxSessionsPerPrincipal, negative: no cap; sessions opened without
	// credentials count only against MaxSessions). At a cap the session idle
	// longest is closed to make room; when every session has a call in flight the
	// new one is refused with HTTP 503 and a JSON-RPC error (sessions.go).
	MaxSessions             int
	MaxSessionsPerPrincipal int
	// MaxConcurrentCalls bounds the requests of one Streamable HTTP session (of
	// one POST when stateless) that run at once, in a batch or in parallel POSTs;
	// the others wait (default DefaultMaxConcurrentCalls, negative: no bound).
	MaxConcurrentCalls int
	// Admission is the server's admission control (admission: in YAML): at most
	// MaxRunning requests of the whole server run at once, a short queue waits,
	// the rest are refused with 503 + Retry-After and the JSON-RPC busy error
	// (transport.CodeServerBusy). MaxRunning <= 0: none. Helix's Streamable HTTP
	// transport (fast path included) and the SSE transport apply it.
	Admission transport.AdmissionOptions
	// ChargeCalls, when set, takes n more rate-limit tokens for an admitted POST:
	// Helix's Streamable HTTP transport calls it for a batch's calls beyond the
	// first (transport.Options.ChargeCalls); the security stack's ChargeCalls.
	ChargeCalls func(r *http.Request, n int) (ok bool, retryAfter time.Duration, err error)
	// Stdin and Stdout carry the stdio transport; defaults os.Stdin and os.Stdout.
	// Nothing else may write to Stdout while the server runs.
	Stdin  io.Reader
	Stdout io.Writer
	// HTTPMiddleware, when set, wraps the whole HTTP handler of this server (security
	// layers: auth, CORS, rate limits, body limits). It is called once, when the
	// server starts.
	HTTPMiddleware func(http.Handler) http.Handler
	// MaxRequestBodyBytes is the MCP transports' own request body limit (Helix's
	// Streamable HTTP and the go-sdk's): 0 keeps the default (4 MiB), negative
	// disables it. Set it to the limit HTTPMiddleware
	// enforces, so that the SDK does not refuse bodies the middleware allowed.
	MaxRequestBodyBytes int64
	// DisableLocalhostProtection switches off the transports' DNS-rebinding check (a
	// non-loopback Host, or with Helix's transport also Origin, on a loopback
	// listener is refused with 403). Set it only when
	// HTTPMiddleware performs that check itself: the security stack does, and exempts
	// trusted proxies, which forward the public Host to a loopback listener.
	DisableLocalhostProtection bool
	// ToolAllowed, when set, is asked about each tool by its MCP name: an error hides
	// the tool from tools/list, and a call gets exactly the answer of a tool that does
	// not exist (JSON-RPC -32602 unknown tool "…"); the error's text is logged.
	// ctx carries the caller's OAuth token, when there is one, for
	// security.ClaimsFromContext (per-tool scopes).
	ToolAllowed func(ctx context.Context, toolName string) error
	// ReceivingMiddleware wraps the handling of every request the server receives
	// (go-sdk receiving middleware, outermost first, outside Helix's own). It runs
	// for tools/call answered by the fast path too (fastcall.go), where the
	// request's Session is nil on a stateless server. Register middleware here
	// rather than on the go-sdk server, which the fast path does not consult.
	ReceivingMiddleware []sdk.Middleware
	// Logger defaults to the engine context's logger at the time the server starts.
	Logger *slog.Logger
	// Resources and Prompts are offered besides the tools and helix://workflows
	// (resources.go, prompts.go); completion/complete answers for both
	// (completion.go). ToolAllowed is asked about each by name.
	Resources []*Resource
	Prompts   []*Prompt
	// ResourcePollInterval is how often subscribed resources with a Stamp (files)
	// are checked for changes; 0 means DefaultResourcePollInterval.
	ResourcePollInterval time.Duration
	// RequestState configures the sealed requestState of MCP 2026-07-28
	// input-required results (inputrequired.go).
	RequestState RequestStateOptions
	// Extension, when set, serves primitives besides the workflows: a gateway's
	// upstream tools, prompts, resources and completions (gateway.go).
	Extension Extension
	// Audiences are virtual servers on the same listener, each at its path with
	// the subset of tools and prompts its globs match (gateway.go); http only.
	Audiences []Audience
}

// RequestStateOptions configure the requestState a server hands MCP 2026-07-28
// clients with its questions (package requeststate).
type RequestStateOptions struct {
	// Key is the AES-256 key (32 bytes). nil: a random key per process, so that a
	// state only comes back to the process that issued it; replicas behind a load
	// balancer need one shared key.
	Key []byte
	// TTL is how long a state can be used; 0 means requeststate.DefaultTTL (10m).
	TTL time.Duration
	// Store is the redis:// or rediss:// URL of the Redis where used states are
	// remembered, so that every replica refuses a replayed one; "" remembers them
	// in this process (an LRU bounded in size).
	Store string
}

// Info describes a declared or running server.
type Info struct {
	ID        string
	Name      string
	Version   string
	Transport string
	// Addr is the bound address while running, else the configured one ("" for stdio).
	Addr      string
	Stateless bool
	Running   bool
	Tools     []ToolInfo
	Resources []ResourceInfo
	Prompts   []PromptInfo
}

// Component is the mcp-server component of one engine context. It serves
// the servers declared with [Component.AddServer] from the context's Start to
// its Stop, and one server per mcp-server:// trigger for the life of that workflow.
// Its methods are safe for concurrent use.
type Component struct {
	hc *engine.Context

	mu       sync.Mutex
	declared []*mcpServer          // AddServer, in order
	running  map[string]*mcpServer // by id: declared and URI servers while they run
	started  bool
	stopped  bool

	done     chan struct{} // closed when a stdio server's input ends
	doneOnce sync.Once

	tools *tool.Catalogue // nil: the context's workflows (tool.FromWorkflows)

	calls toolCallStats
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Lifecycle = (*Component)(nil)
)

// New returns the mcp-server component for hc; register it with
// hc.AddComponent("mcp-server", New(hc)). It has no side effects until Start.
func New(hc *engine.Context) *Component {
	return &Component{hc: hc, running: map[string]*mcpServer{}, done: make(chan struct{})}
}

// SetCatalogue makes the servers serve the tools of cat: their expose lists select
// from it. Without one they serve the context's workflows, read when a server
// starts or is described (tool.FromWorkflows). Call it before the servers start;
// pkg/app gives every application's component its catalogue.
func (c *Component) SetCatalogue(cat *tool.Catalogue) {
	c.mu.Lock()
	c.tools = cat
	c.mu.Unlock()
}

// catalogue is what the servers select their tools from.
func (c *Component) catalogue() *tool.Catalogue {
	c.mu.Lock()
	cat := c.tools
	c.mu.Unlock()
	if cat != nil {
		return cat
	}
	return tool.FromWorkflows(c.hc)
}

// Done is closed when a stdio server's input ends (the client went away); the
// helix CLI then stops the application, as a subprocess server should.
func (c *Component) Done() <-chan struct{} { return c.done }

func (c *Component) signalDone() { c.doneOnce.Do(func() { close(c.done) }) }

// AddServer declares a server that starts with the context (or at once, when the
// context is already running). Its options are checked now; the exposed workflows
// are resolved when it starts, so workflows may be added after it (use
// [Component.Describe] to check them earlier, as configuration validation does).
func (c *Component) AddServer(opts Options) error {
	if err := c.normalize(&opts); err != nil {
		return err
	}
	s := &mcpServer{comp: c, opts: opts}
	c.mu.Lock()
	for _, d := range c.declared {
		if d.opts.ID == opts.ID {
			c.mu.Unlock()
			return fmt.Errorf("mcp server %s: declared twice; give each server its own id", opts.ID)
		}
	}
	if c.stopped {
		c.mu.Unlock()
		return fmt.Errorf("mcp server %s: the context is stopped", opts.ID)
	}
	c.declared = append(c.declared, s)
	startNow := c.started
	c.mu.Unlock()
	if startNow {
		return c.startServer(context.Background(), s)
	}
	return nil
}

func (c *Component) normalize(o *Options) error {
	if o.Name == "" {
		o.Name = DefaultServerName
	}
	if o.ID == "" {
		o.ID = o.Name
	}
	if o.Version == "" {
		o.Version = DefaultServerVersion
	}
	o.Transport = strings.ToLower(strings.TrimSpace(o.Transport))
	switch o.Transport {
	case "":
		o.Transport = TransportHTTP
	case TransportHTTP, TransportSSE, TransportStdio:
	case "streamable", "streamable-http", "streamable_http":
		o.Transport = TransportHTTP
	default:
		return fmt.Errorf("mcp server %s: unknown transport %q (use http, sse or stdio)", o.ID, o.Transport)
	}
	o.HTTPTransport = strings.ToLower(strings.TrimSpace(o.HTTPTransport))
	switch o.HTTPTransport {
	case "":
		o.HTTPTransport = DefaultHTTPTransport
	case HTTPTransportHelix, HTTPTransportSDK:
	default:
		return fmt.Errorf("mcp server %s: unknown http_transport %q (use helix or sdk)", o.ID, o.HTTPTransport)
	}
	if o.Transport != TransportStdio && o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Transport != TransportStdio {
		if _, _, err := net.SplitHostPort(o.Addr); err != nil {
			return fmt.Errorf("mcp server %s: addr %q: want host:port (for example 0.0.0.0:3000): %v", o.ID, o.Addr, err)
		}
	}
	if o.SessionIdleTimeout == 0 {
		o.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerPrincipal == 0 {
		o.MaxSessionsPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
	if o.MaxConcurrentCalls == 0 {
		o.MaxConcurrentCalls = DefaultMaxConcurrentCalls
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	return nil
}

// logger returns the server's own logger, else the engine context's.
func (c *Component) logger(o *Options) *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return c.hc.Logger()
}

// Start starts the declared servers (component lifecycle; called by the engine).
func (c *Component) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("mcp-server component already started")
	}
	c.started = true
	declared := slices.Clone(c.declared)
	c.mu.Unlock()
	for i, s := range declared {
		if err := c.startServer(ctx, s); err != nil {
			for j := i - 1; j >= 0; j-- {
				_ = c.stopServer(ctx, declared[j])
			}
			return err
		}
	}
	return nil
}

// Stop stops every server still running (component lifecycle; called by the engine
// after the workflows have drained).
func (c *Component) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = true
	var all []*mcpServer
	for _, s := range c.running {
		all = append(all, s)
	}
	c.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, c.stopServer(ctx, s))
	}
	return errors.Join(errs...)
}

func (c *Component) startServer(ctx context.Context, s *mcpServer) error {
	c.mu.Lock()
	if _, dup := c.running[s.opts.ID]; dup {
		c.mu.Unlock()
		return fmt.Errorf("mcp server %s: a server with this id is already running", s.opts.ID)
	}
	c.running[s.opts.ID] = s
	c.mu.Unlock()
	if err := s.start(ctx); err != nil {
		c.mu.Lock()
		delete(c.running, s.opts.ID)
		c.mu.Unlock()
		return fmt.Errorf("mcp server %s: %w", s.opts.ID, err)
	}
	return nil
}

func (c *Component) stopServer(ctx context.Context, s *mcpServer) error {
	err := s.stop(ctx)
	c.mu.Lock()
	if c.running[s.opts.ID] == s {
		delete(c.running, s.opts.ID)
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("mcp server %s: %w", s.opts.ID, err)
	}
	return nil
}

// Addr returns the bound address of the running http/sse server id, or nil.
func (c *Component) Addr(id string) net.Addr {
	c.mu.Lock()
	s := c.running[id]
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.boundAddr()
}

// Servers describes the declared servers and the running mcp-server:// servers,
// sorted by id. Tools of a declared server that is not running are resolved from
// the context's current workflows; a server whose tools cannot be resolved is
// listed without tools.
func (c *Component) Servers() []Info {
	c.mu.Lock()
	seen := map[*mcpServer]bool{}
	var all []*mcpServer
	for _, s := range c.declared {
		seen[s] = true
		all = append(all, s)
	}
	for _, s := range c.running {
		if !seen[s] {
			all = append(all, s)
		}
	}
	c.mu.Unlock()
	out := make([]Info, 0, len(all))
	for _, s := range all {
		out = append(out, s.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Describe resolves what a server with opts would expose, without starting it.
// Configuration validation and helix mcp list use it. On an *UnknownExposeError
// the returned info still lists the tools that resolved.
func (c *Component) Describe(opts Options) (Info, error) {
	if err := c.normalize(&opts); err != nil {
		return Info{}, err
	}
	s := &mcpServer{comp: c, opts: opts}
	tools, err := buildTools(c.catalogue(), &s.opts)
	info := s.infoWith(tools)
	if err != nil {
		return info, fmt.Errorf("mcp server %s: %w", opts.ID, err)
	}
	return info, nil
}

// CreateEndpoint builds the endpoint of an mcp-server://host:port?transport=…&name=…
// &version=…&stateless=… trigger. The endpoint is consumer-only.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	opts, err := OptionsFromURI(u)
	if err != nil {
		return nil, err
	}
	if err := c.normalize(&opts); err != nil {
		return nil, err
	}
	return &serverEndpoint{comp: c, raw: u.Raw, opts: opts}, nil
}

// uriOptions are the URI's options (see Spec). Those the URI leaves out stay zero
// (nodefault): normalize applies the defaults, the same way for URIs and YAML
// entries.
type uriOptions struct {
	Transport               string        `option:"transport,nodefault"`
	Name                    string        `option:"name,nodefault"`
	Version                 string        `option:"version,nodefault"`
	Stateless               bool          `option:"stateless"`
	SessionIdleTimeout      time.Duration `option:"sessionIdleTimeout,nodefault"`
	HTTPTransport           string        `option:"httpTransport,nodefault"`
	FastToolCalls           bool          `option:"fastToolCalls"`
	MaxSessions             int64         `option:"maxSessions,nodefault"`
	MaxSessionsPerPrincipal int64         `option:"maxSessionsPerPrincipal,nodefault"`
	MaxConcurrentCalls      int64         `option:"maxConcurrentCalls,nodefault"`
	netguard.URIOptions
}

var uriBinding = component.Bind[uriOptions](Spec)

// OptionsFromURI reads an mcp-server:// URI (spec §5.2). The id is the
// normalised URI, so that two triggers on one address clash visibly.
func OptionsFromURI(u *uri.URI) (Options, error) {
	p, err := uriBinding.Parse(u)
	if err != nil {
		return Options{}, fmt.Errorf("mcp-server: %w", err)
	}
	opts := Options{
		ID:                 "mcp-server://" + u.Host + u.Path,
		Name:               p.Name,
		Version:            p.Version,
		Transport:          p.Transport,
		Addr:               u.Host,
		HTTPTransport:      p.HTTPTransport,
		Stateless:          p.Stateless,
		SessionIdleTimeout: p.SessionIdleTimeout,
	}
	for _, limit := range []struct {
		name string
		n    int64
		dst  *int
	}{{"maxSessions", p.MaxSessions, &opts.MaxSessions}, {"maxSessionsPerPrincipal", p.MaxSessionsPerPrincipal, &opts.MaxSessionsPerPrincipal}} {
		if limit.n < -1 || limit.n > math.MaxInt32 {
			return Options{}, fmt.Errorf("mcp-server: option %s=%d: want a number of sessions, 0 for the default or -1 for no limit", limit.name, limit.n)
		}
		*limit.dst = int(limit.n)
	}
	if n := p.MaxConcurrentCalls; n < -1 || n > math.MaxInt32 {
		return Options{}, fmt.Errorf("mcp-server: option maxConcurrentCalls=%d: want a number of requests, 0 for the default (%d) or -1 for no limit", n, DefaultMaxConcurrentCalls)
	}
	opts.MaxConcurrentCalls = int(p.MaxConcurrentCalls)
	if opts.Limits, _, err = p.Limits(); err != nil {
		return Options{}, fmt.Errorf("mcp-server: %w", err)
	}
	fast := p.FastToolCalls
	opts.FastToolCalls = &fast
	if strings.EqualFold(opts.Transport, TransportStdio) {
		opts.Addr = ""
	}
	return opts, nil
}

type serverEndpoint struct {
	comp *Component
	raw  string
	opts Options
}

func (e *serverEndpoint) URI() string { return e.raw }

func (e *serverEndpoint) CreateProducer() (component.Producer, error) {
	return nil, component.ErrConsumerOnly
}

// CreateConsumer returns the consumer that runs the server. The workflow's own
// pipeline is not used: an MCP server workflow only exists to carry the trigger.
func (e *serverEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return &serverConsumer{comp: e.comp, opts: e.opts}, nil
}

type serverConsumer struct {
	comp *Component
	opts Options
	s    *mcpServer
}

func (sc *serverConsumer) Start(ctx context.Context) error {
	s := &mcpServer{comp: sc.comp, opts: sc.opts}
	if err := sc.comp.startServer(ctx, s); err != nil {
		return err
	}
	sc.s = s
	return nil
}

func (sc *serverConsumer) Stop(ctx context.Context) error {
	if sc.s == nil {
		return nil
	}
	return sc.comp.stopServer(ctx, sc.s)
}

// FastToolCallsOn reports whether the tools/call fast path is on: FastToolCalls when
// set, else on unless the deprecated DisableFastToolCalls is set.
func (o *Options) FastToolCallsOn() bool {
	if o.FastToolCalls != nil {
		return *o.FastToolCalls
	}
	return !o.DisableFastToolCalls
}

// URITransport returns the transport an mcp-server:// URI asks for (http, sse or
// stdio, lower case), or "" when it names none or the URI is refused; callers
// outside this package read the option only through it.
func URITransport(u *uri.URI) string {
	o, err := uriBinding.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(o.Transport)
}
