package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Scheme is the URI scheme of the MCP client component.
const Scheme = "mcp"

// MsgToolErrorNoText is the body of an exchange whose tool returned isError without any
// text (wording from the mcp:// component page).
const MsgToolErrorNoText = "mcp tool returned error with no message"

// Component is the mcp:// component: a producer that calls a tool on an external
// MCP server (mcp://<server-addr>/<tool-name>?transport=http|sse|stdio).
//
// Endpoints whose URIs reach the same server the same way (same transport, address,
// command line and auth) share one [Conn], hence one MCP session (one stdio
// subprocess): mcp://host:8080/search and mcp://host:8080/fetch talk over one session.
// The session opens on the first call and closes when the last producer using it stops.
//
// Safe for concurrent use.
type Component struct {
	mu     sync.Mutex
	conns  map[string]*sharedConn
	auths  map[string]*AuthConfig // by normalised URI; see SetAuth
	agents func(id string) (Sampler, bool)
}

// SetAgents tells the component how to find the model of the agent an
// onSample=agent:<id> option names (answers.go); without it such an option is an
// error.
func (c *Component) SetAgents(lookup func(id string) (Sampler, bool)) {
	c.mu.Lock()
	c.agents = lookup
	c.mu.Unlock()
}

type sharedConn struct {
	conn *Conn
	refs int
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Lifecycle = (*Component)(nil)
)

// New returns the mcp:// component.
func New() *Component {
	return &Component{conns: map[string]*sharedConn{}, auths: map[string]*AuthConfig{}}
}

// CreateEndpoint parses an mcp:// URI (see [ParseURI]); the endpoint
// authenticates with what [Component.SetAuth] registered for the URI, if anything.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	c.mu.Lock()
	auth := c.auths[u.Normalized()]
	c.mu.Unlock()
	return c.EndpointWithAuth(u, auth)
}

// SetAuth makes the endpoint of u authenticate with auth. The target step calls it
// while a workflow is built, for `target: {uri: mcp://…, auth: {…}}`; the engine
// creates the endpoint later, on start. The URI is checked and mTLS files are loaded
// now, so mistakes are configuration errors. Registering a different auth for the
// same URI is an error: the engine builds one endpoint per URI, so the two targets
// could not both be honoured.
func (c *Component) SetAuth(u *uri.URI, auth *AuthConfig) error {
	if auth == nil {
		return fmt.Errorf("%s: no auth given", Spec.Redact(u.Raw))
	}
	if _, err := c.EndpointWithAuth(u, auth); err != nil {
		return err
	}
	key := u.Normalized()
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.auths[key]; ok && !reflect.DeepEqual(prev, auth) {
		return fmt.Errorf("%s: another target with this URI has a different auth; one URI is one endpoint with one auth (vary the URI, e.g. a timeout option, to keep them apart)", Spec.Redact(u.Raw))
	}
	c.auths[key] = auth
	return nil
}

// EndpointWithAuth builds an endpoint whose calls authenticate with auth (nil: none).
// The target step uses it for `target: {uri: mcp://…, auth: {…}}`.
func (c *Component) EndpointWithAuth(u *uri.URI, auth *AuthConfig) (*Endpoint, error) {
	cfg, tool, opts, err := parseURI(u)
	if err != nil {
		return nil, err
	}
	if auth != nil {
		if cfg.Transport == TransportStdio {
			return nil, fmt.Errorf("%s: auth applies to the http and sse transports, not stdio", Spec.Redact(u.Raw))
		}
		if err := auth.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", Spec.Redact(u.Raw), err)
		}
		if auth.Type == AuthMTLS {
			// Load the certificates now: a wrong path is a configuration error, better
			// reported when the workflow is built than at its first call.
			if _, err := auth.tlsConfig(); err != nil {
				return nil, fmt.Errorf("%s: %w", Spec.Redact(u.Raw), err)
			}
		}
		if auth.Type == AuthMTLS && opts.Scheme == "" {
			// Client certificates only mean something over TLS.
			cfg.Endpoint = "https" + strings.TrimPrefix(cfg.Endpoint, "http")
		}
		cfg.Auth = auth
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Spec.Redact(u.Raw), err)
	}
	if id, ok := strings.CutPrefix(cfg.Answers.Sample, AnswerAgentPrefix); ok {
		c.mu.Lock()
		lookup := c.agents
		c.mu.Unlock()
		s, found := Sampler(nil), false
		if lookup != nil {
			s, found = lookup(id)
		}
		if !found {
			return nil, fmt.Errorf("%s: onSample=%s: there is no agent %q in agents: (name the id of one, or use onSample=forward)", Spec.Redact(u.Raw), cfg.Answers.Sample, id)
		}
		if s == nil {
			return nil, fmt.Errorf("%s: onSample=%s: agent %q has no model to answer with (see its own errors)", Spec.Redact(u.Raw), cfg.Answers.Sample, id)
		}
		cfg.Answers.Sampler = s
	}
	return &Endpoint{comp: c, uri: u, cfg: cfg, tool: tool, throw: opts.ThrowExceptionOnFailure}, nil
}

// NewEndpoint builds a stand-alone endpoint (with its own session) for u,
// authenticating with auth (nil: none). Agent tools and tests use it; workflows go
// through a registered [Component] so endpoints share sessions.
func NewEndpoint(u *uri.URI, auth *AuthConfig) (*Endpoint, error) {
	return New().EndpointWithAuth(u, auth)
}

// Start implements component.Lifecycle; sessions open lazily, so there is nothing to do.
func (c *Component) Start(context.Context) error { return nil }

// Stop closes every session still open (producers normally release theirs first).
func (c *Component) Stop(context.Context) error {
	c.mu.Lock()
	conns := c.conns
	c.conns = map[string]*sharedConn{}
	c.mu.Unlock()
	var errs []error
	for _, sc := range conns {
		errs = append(errs, sc.conn.Close())
	}
	return errors.Join(errs...)
}

// acquire returns the shared connection for cfg, creating it on first use.
func (c *Component) acquire(cfg Config) (*Conn, error) {
	key, err := connKey(cfg)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.conns[key]; ok {
		sc.refs++
		return sc.conn, nil
	}
	conn, err := NewConn(cfg)
	if err != nil {
		return nil, err
	}
	c.conns[key] = &sharedConn{conn: conn, refs: 1}
	return conn, nil
}

// release drops one reference; the last one closes the session.
func (c *Component) release(conn *Conn) error {
	c.mu.Lock()
	for key, sc := range c.conns {
		if sc.conn != conn {
			continue
		}
		sc.refs--
		if sc.refs > 0 {
			c.mu.Unlock()
			return nil
		}
		delete(c.conns, key)
		break
	}
	c.mu.Unlock()
	return conn.Close()
}

// connKey identifies what makes two connections interchangeable. The call timeout is
// per endpoint and not part of it.
func connKey(cfg Config) (string, error) {
	k := struct {
		Transport, Endpoint, Command string
		FindPath                     bool
		Args, Env                    []string
		Header                       map[string][]string
		Auth                         *AuthConfig
		Protocol                     string
		MaxResponseBytes             int64
		OnElicit, OnSample           string // answers.go: each policy its own session
	}{cfg.Transport, cfg.Endpoint, cfg.Command, cfg.FindPath, cfg.Args, cfg.Env, cfg.Header, cfg.Auth, cfg.ProtocolVersion, cfg.MaxResponseBytes,
		cfg.Answers.elicitPolicy(), cfg.Answers.samplePolicy()}
	b, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("mcp client: key for %s: %w", cfg.target(), err)
	}
	return string(b), nil
}

// ParseURI turns an mcp:// URI into a connection config and the tool name.
//
// The address and path are split at the last "/": what comes before is the server
// address, the last segment the tool (empty when absent: then every exchange must name
// the tool in HelixMcpToolName). Options:
//
//   - transport=http (default: Streamable HTTP at http://<addr>; a bare host:port is
//     looked for at /mcp, then at /, see Config.FindPath), sse (the SSE endpoint
//     http://<addr>/sse, or http://<addr> as is when the address has a path) or stdio
//     (<addr> is the executable, a path or a name looked up in PATH);
//   - scheme=http|https for http and sse;
//   - timeout=30s bounds each call, connecting included (0 = no limit);
//   - args=… (repeatable, one argument each, in order) and env=NAME=value (repeatable)
//     for stdio;
//   - throwExceptionOnFailure=false (read by the endpoint, not here) keeps tool errors
//     from failing the exchange.
func ParseURI(u *uri.URI) (Config, string, error) {
	cfg, tool, _, err := parseURI(u)
	return cfg, tool, err
}

// uriOptions are the URI's options (see Spec).
type uriOptions struct {
	Transport               string        `option:"transport"`
	Scheme                  string        `option:"scheme"`
	Timeout                 time.Duration `option:"timeout"`
	Args                    []string      `option:"args"`
	Env                     []string      `option:"env"`
	MaxResponseBytes        int64         `option:"maxResponseBytes"`
	ProtocolVersion         string        `option:"protocolVersion"`
	OnElicit                string        `option:"onElicit"`
	OnSample                string        `option:"onSample"`
	ThrowExceptionOnFailure bool          `option:"throwExceptionOnFailure"`
}

var uriBinding = component.Bind[uriOptions](Spec)

// parseURI is ParseURI, also returning the options the endpoint reads.
func parseURI(u *uri.URI) (cfg Config, tool string, p uriOptions, err error) {
	if u.Scheme != Scheme {
		return cfg, "", p, fmt.Errorf("%s: not an mcp:// URI", Spec.Redact(u.Raw))
	}
	if p, err = uriBinding.Parse(u); err != nil {
		return cfg, "", p, err
	}
	full := u.Host + u.Path
	addr, tool := full, ""
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		addr, tool = full[:i], full[i+1:]
	}
	if t, err := url.PathUnescape(tool); err == nil {
		tool = t
	}
	timeout := p.Timeout
	if timeout < 0 {
		return cfg, "", p, fmt.Errorf("%s: timeout must not be negative", Spec.Redact(u.Raw))
	}
	if timeout == 0 {
		timeout = -1 // Config: negative means no limit
	}
	cfg.Timeout = timeout
	cfg.MaxResponseBytes = p.MaxResponseBytes
	cfg.ProtocolVersion = p.ProtocolVersion
	if cfg.MaxResponseBytes <= 0 {
		return cfg, "", p, fmt.Errorf("%s: option maxResponseBytes=%d must be a positive number of bytes", Spec.Redact(u.Raw), cfg.MaxResponseBytes)
	}
	// answers.go; refuse stays the zero value.
	if cfg.Answers.Elicit, err = ParseElicitPolicy(p.OnElicit); err != nil {
		return cfg, "", p, fmt.Errorf("%s: %w", Spec.Redact(u.Raw), err)
	}
	if cfg.Answers.Sample, _, err = ParseSamplePolicy(p.OnSample); err != nil {
		return cfg, "", p, fmt.Errorf("%s: %w", Spec.Redact(u.Raw), err)
	}
	if cfg.Answers.Elicit == AnswerRefuse {
		cfg.Answers.Elicit = ""
	}
	if cfg.Answers.Sample == AnswerRefuse {
		cfg.Answers.Sample = ""
	}
	cfg.Transport = p.Transport
	switch cfg.Transport {
	case TransportHTTP, TransportSSE:
		if len(p.Args) > 0 || len(p.Env) > 0 {
			return cfg, "", p, fmt.Errorf("%s: args and env apply to transport=stdio only", Spec.Redact(u.Raw))
		}
		if addr == "" || strings.HasPrefix(addr, "/") {
			return cfg, "", p, fmt.Errorf("%s: transport %s needs a host:port address, as in mcp://localhost:8080/%s", Spec.Redact(u.Raw), cfg.Transport, orTool(tool))
		}
		scheme := p.Scheme
		if scheme == "" {
			scheme = "http"
		}
		cfg.Endpoint = scheme + "://" + addr
		if !strings.Contains(addr, "/") {
			switch cfg.Transport {
			case TransportSSE:
				cfg.Endpoint += "/sse"
			case TransportHTTP:
				// No path: find the server at /mcp, else at / (Config.FindPath).
				cfg.FindPath = true
			}
		}
		if _, err := url.Parse(cfg.Endpoint); err != nil {
			return cfg, "", p, fmt.Errorf("%s: bad server address: %w", Spec.Redact(u.Raw), err)
		}
	case TransportStdio:
		if p.Scheme != "" {
			return cfg, "", p, fmt.Errorf("%s: scheme applies to the http and sse transports, not stdio", Spec.Redact(u.Raw))
		}
		if addr == "" {
			return cfg, "", p, fmt.Errorf("%s: transport stdio needs the server executable before the tool name, as in mcp:///usr/local/bin/server/%s?transport=stdio", Spec.Redact(u.Raw), orTool(tool))
		}
		if u.AddressFromPlaceholder() && commandFromPlaceholder(u.Template) {
			return cfg, "", p, fmt.Errorf("%s: the executable of a stdio target must be written in the URI, not come from a placeholder (only the tool, the last segment, may)", Spec.Redact(u.Raw))
		}
		cfg.Command = addr
		cfg.Args = p.Args
		for _, kv := range p.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				// The value may be a credential: it is not shown.
				return cfg, "", p, fmt.Errorf("%s: every env option must look like env=NAME=value", Spec.Redact(u.Raw))
			}
			cfg.Env = append(cfg.Env, kv)
		}
	default:
		return cfg, "", p, fmt.Errorf("%s: unknown transport %q (use http, sse or stdio)", Spec.Redact(u.Raw), cfg.Transport)
	}
	return cfg, tool, p, nil
}

// commandFromPlaceholder reports whether a ${…} placeholder of template stands
// before the last '/' of its address, in the part that names a stdio server's
// executable. uri.ExpandURI encodes a '/' in a value, so a placeholder in the tool
// segment cannot reach the executable.
func commandFromPlaceholder(template string) bool {
	// Each placeholder becomes a NUL, so that a '?' or '/' inside one does not count.
	var b strings.Builder
	rest := strings.TrimPrefix(template, Scheme+"://")
	for {
		i := strings.Index(rest, "${")
		j := strings.IndexByte(rest[max(i, 0):], '}')
		if i < 0 || j < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		b.WriteByte(0)
		rest = rest[i+j+1:]
	}
	addr, _, _ := strings.Cut(b.String(), "?")
	last := strings.LastIndexByte(addr, '/')
	return last >= 0 && strings.IndexByte(addr[:last], 0) >= 0 || last < 0 && strings.IndexByte(addr, 0) >= 0
}

func orTool(tool string) string {
	if tool == "" {
		return "tool"
	}
	return tool
}

// VariableMcpToolNameWritten is the exchange variable in which the producer records
// the tool name it wrote to HelixMcpToolName; see [toolOverride].
const VariableMcpToolNameWritten = "HelixMcpToolNameWritten"

// toolOverride returns the tool named by header HelixMcpToolName, or "".
//
// One header name serves two purposes (spec): read, it overrides the URI's tool;
// written, it reports the tool an MCP call was about — by the mcp-server:// side for an
// incoming call, by this producer after an outgoing one. Taken literally, a written
// value would then redirect every later mcp:// target of the workflow: spec §12.4's
// research-topic, called as a tool, would call "research_topic" on each of its three
// sources, and a second mcp:// target would call the first one's tool. So when the URI
// names a tool, a header value that Helix itself wrote is not an override: the one this
// producer recorded in VariableMcpToolNameWritten, and the incoming tool's name that
// the MCP server set next to HelixMcpServerName and HelixMcpRouteID. A value set by
// the workflow (set-header) is always an override. When the URI names no tool
// (mcp://host:port), the header is the only source, whatever set it — which makes
// `target: mcp://upstream:8080` a pass-through proxy for the incoming tool.
func toolOverride(ex *exchange.Exchange, uriHasTool bool) string {
	msg := ex.In()
	v := strings.TrimSpace(msg.HeaderString(exchange.HeaderMcpToolName))
	if v == "" || !uriHasTool {
		return v
	}
	if w, ok := ex.Variable(VariableMcpToolNameWritten).(string); ok && w == v {
		return ""
	}
	if msg.HeaderString(exchange.HeaderMcpServerName) != "" {
		if rid := msg.HeaderString(exchange.HeaderMcpRouteID); rid != "" && tool.SanitizeName(rid) == v {
			return ""
		}
	}
	return v
}

// Endpoint is one mcp:// URI: a server and a default tool.
type Endpoint struct {
	comp *Component
	uri  *uri.URI
	cfg  Config
	tool string
	// throw sets the exchange's exception on tool errors (throwExceptionOnFailure,
	// default true); false lets the workflow go on and test HelixMcpIsError itself.
	throw bool
}

var _ component.Endpoint = (*Endpoint)(nil)

// URI returns the endpoint's URI.
func (e *Endpoint) URI() string { return e.uri.Raw }

// Tool returns the tool named in the URI ("" when the URI names none).
func (e *Endpoint) Tool() string { return e.tool }

// Config returns the connection config derived from the URI.
func (e *Endpoint) Config() Config { return e.cfg }

// CreateProducer returns a producer calling the endpoint's tool.
func (e *Endpoint) CreateProducer() (component.Producer, error) {
	return &Producer{ep: e}, nil
}

// CreateConsumer fails: mcp:// can only be a target.
func (e *Endpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, fmt.Errorf("mcp:// calls tools on an MCP server (use mcp-server:// to expose workflows as tools): %w", component.ErrProducerOnly)
}

// Producer calls the tool for each exchange. Start takes a reference on the
// shared session (without connecting), Stop releases it; Process is safe for
// concurrent use between them.
type Producer struct {
	ep *Endpoint

	mu   sync.Mutex
	conn *Conn
}

var _ component.Producer = (*Producer)(nil)

// Journaled reports that in a durable run the producer records its calls'
// outcomes in the run's journal (tasks.go): on Streamable HTTP, where a server
// may answer with a task.
func (p *Producer) Journaled() bool { return p.ep.cfg.Transport == TransportHTTP }

// Name names the step in error messages.
func (p *Producer) Name() string { return "target " + p.ep.uri.Raw }

// Start prepares the shared connection; nothing is dialled until the first exchange.
func (p *Producer) Start(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		return nil
	}
	conn, err := p.ep.comp.acquire(p.ep.cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", p.ep.uri.Raw, err)
	}
	p.conn = conn
	return nil
}

// Stop releases the connection; the last producer of a session closes it (and ends a
// stdio subprocess).
func (p *Producer) Stop(context.Context) error {
	p.mu.Lock()
	conn := p.conn
	p.conn = nil
	p.mu.Unlock()
	if conn == nil {
		return nil
	}
	return p.ep.comp.release(conn)
}

// Process calls the tool with the body as arguments and puts the result in the body.
//
// Headers: HelixMcpToolName (read: overrides the URI's tool; written: the tool called)
// and HelixMcpIsError ("true"/"false"). When the tool fails — a result with isError, or
// a JSON-RPC error from the server such as an unknown tool — the body is the error text,
// HelixMcpIsError is "true" and the exchange's exception is set, so the workflow's
// error handler runs. A server that cannot be reached is an error of the step.
func (p *Producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	p.mu.Lock()
	conn := p.conn
	p.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("%s: producer is not started", p.ep.uri.Raw)
	}
	msg := ex.In()
	tool := p.ep.tool
	if override := toolOverride(ex, tool != ""); override != "" {
		tool = override
	}
	if tool == "" {
		return fmt.Errorf("%s: no tool to call: name it in the URI (mcp://host:port/tool) or in header %s", p.ep.uri.Raw, exchange.HeaderMcpToolName)
	}
	msg.SetHeader(exchange.HeaderMcpToolName, tool)
	ex.SetVariable(VariableMcpToolNameWritten, tool)
	res, err := conn.callTool(ctx, tool, ArgumentsFromBody(msg.Body()), p.ep.cfg.Timeout)
	if err != nil {
		// te is declared here, not before the call: errors.As moves it to the heap,
		// which a successful call need not pay for.
		var te *ToolError
		if !errors.As(err, &te) {
			return err
		}
		msg.SetBody(te.Message)
		msg.SetHeader(exchange.HeaderMcpIsError, "true")
		if p.ep.throw {
			ex.SetException(te)
		}
		return nil
	}
	body, err := BodyFromResult(res)
	if err != nil {
		return fmt.Errorf("%s: %w", p.ep.uri.Raw, err)
	}
	if res.IsError {
		if body == "" {
			body = MsgToolErrorNoText
		}
		msg.SetBody(body)
		msg.SetHeader(exchange.HeaderMcpIsError, "true")
		if p.ep.throw {
			ex.SetException(&ToolError{Tool: tool, Message: body})
		}
		return nil
	}
	msg.SetBody(body)
	msg.SetHeader(exchange.HeaderMcpIsError, "false")
	return nil
}

// ComponentOf returns the context's mcp:// component, registering one when the
// context has none yet (an mcp:// target could not run without it anyway). The
// application calls it while building, for target steps with an auth: block.
func ComponentOf(hc *engine.Context) (*Component, error) {
	if comp, ok := hc.Component(Scheme); ok {
		cc, ok := comp.(*Component)
		if !ok {
			return nil, fmt.Errorf("auth: the mcp:// component of this context is a %T, not Helix's MCP client, so it cannot take an auth: block", comp)
		}
		return cc, nil
	}
	cc := New()
	hc.AddComponent(Scheme, cc)
	return cc, nil
}

// ThrowsOnToolError reports whether the mcp:// target u fails the exchange when the
// tool answers with isError (throwExceptionOnFailure, true unless set false). A
// URI this component would refuse keeps the default: the refusal is reported where
// the URI is checked.
func ThrowsOnToolError(u *uri.URI) bool {
	o, err := uriBinding.Parse(u)
	return err != nil || o.ThrowExceptionOnFailure
}
