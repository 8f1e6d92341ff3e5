// Package upstream connects the gateway to one third-party MCP server (an
// upstream): it opens the upstream sessions the gateway's relay uses, shares
// them as the upstream's sessions: setting says, checks the upstream's health,
// fails over across its replicas and retries a call only where it cannot have
// run.
//
// A Pool serves one config.UpstreamConfig:
//
//	p, err := upstream.New(cfg, auth, logger, upstream.WithOnReopen(reapply))
//	err = p.Call(ctx, key, opts, func(ctx context.Context, s *sdk.ClientSession) error {
//		res, err = s.CallTool(ctx, params)
//		return err
//	})
//	p.Release(gateway.SessionKey{Downstream: id}) // the downstream session ended
//	p.Close(ctx)
//
// Sessions are keyed by gateway.SessionKey, normalized by the sharing mode:
// shared and per-principal ignore the downstream session (one session, and for
// stdio one process, per principal key; "" for everyone), per-client keeps it.
// Every upstream session negotiates its own protocol version: a downstream
// client of one protocol era may be served by an upstream of the other.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/h1"
	"github.com/arvenza/helix/internal/redact"
)

// Transports of an upstream.
const (
	TransportHTTP  = "http"
	TransportSSE   = "sse"
	TransportStdio = "stdio"
)

// Defaults of an upstream's config and of the pool's options.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultHealthInterval = 15 * time.Second
	DefaultHealthTimeout  = 5 * time.Second
	// DefaultIdleTimeout closes per-client and per-principal sessions (and their
	// stdio processes) nobody used for this long.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMaxSessions caps the sessions (for stdio: processes) one upstream
	// keeps open; the one shared session does not count.
	DefaultMaxSessions = 256
)

// Option configures a Pool.
type Option func(*Pool)

// WithOnReopen sets the function called when a session replaces one that was
// lost (its endpoint died, its process exited, the upstream forgot it), before
// the new session serves a request: the core re-applies the downstream
// session's logging level and resource subscriptions there.
func WithOnReopen(f func(key gateway.SessionKey, s *sdk.ClientSession)) Option {
	return func(p *Pool) { p.onReopen = f }
}

// WithIdleTimeout sets how long an unused per-client or per-principal session
// stays open (default DefaultIdleTimeout; <= 0 keeps them until released).
func WithIdleTimeout(d time.Duration) Option { return func(p *Pool) { p.idleTimeout = d } }

// WithHTTPClient makes the pool send its HTTP requests with c, which carries
// the upstream's headers: and auth: already (the gateway's core builds it);
// New's auth then only serves the oauth2 discover and login forms, whose
// handler the SDK's transport calls. The pool adds each call's own headers
// and its tracking on top of c's transport.
func WithHTTPClient(c *http.Client) Option { return func(p *Pool) { p.httpc = c } }

// WithMaxResponseBytes bounds one answer of the upstream (default the mcp://
// client's, client.DefaultMaxResponseBytes): a larger one fails its call,
// unread beyond the bound.
func WithMaxResponseBytes(n int64) Option {
	return func(p *Pool) {
		if n > 0 {
			p.maxResponse = n
		}
	}
}

// WithAuth gives the pool the upstream's auth: block as the mcp:// client
// reads it, as New's auth does (nil: none): what the oauth2 discover and login
// forms need, whose handler the SDK's transport calls.
func WithAuth(a *client.AuthConfig) Option { return func(p *Pool) { p.auth = a } }

// WithMaxSessions caps the open sessions (default DefaultMaxSessions).
func WithMaxSessions(n int) Option { return func(p *Pool) { p.maxSessions = n } }

// Pool holds the sessions to one upstream. Its methods are safe for
// concurrent use.
type Pool struct {
	cfg         config.UpstreamConfig
	transport   string
	mode        string
	timeout     time.Duration
	log         *slog.Logger
	httpc       *http.Client
	auth        *client.AuthConfig
	base        *http.Transport // its idle connections are closed with the pool
	loop        *h1.Loop        // base's loop for the fast relay, when the pool made base
	onReopen    func(gateway.SessionKey, *sdk.ClientSession)
	idleTimeout time.Duration
	maxSessions int
	maxResponse int64

	ctx    context.Context // the pool's lifetime: ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the pool's goroutines

	mu        sync.Mutex
	endpoints []*endpoint
	sessions  map[gateway.SessionKey]*entry
	closed    bool
	lastErr   string
	protocol  string // negotiated by the last session opened
}

// endpoint is one address of the upstream: URL, a replica, or for stdio the
// command.
type endpoint struct {
	url     string
	shown   string // url as logs, errors and Status show it (passwords, query values, secrets masked)
	oauth   sdkauth.OAuthHandler
	healthy bool
	lastErr string
	checked time.Time          // the last health check or connect (setHealth); zero: never
	probe   *sdk.ClientSession // the health check's own session (http, sse)
}

// entry is one session of the pool, or the opening of one.
type entry struct {
	key      gateway.SessionKey
	ready    chan struct{} // closed once the open attempt ended
	s        *sdk.ClientSession
	err      error
	endpoint *endpoint
	dead     bool // lost: the next use opens a new one (and tells onReopen)
	lastUsed time.Time
	inflight int
}

// New returns the pool of cfg's upstream. auth is its auth: block as the
// mcp:// client reads it (nil: none). No connection is made before the first
// Session; health checks start at once (http, sse).
func New(cfg config.UpstreamConfig, auth *client.AuthConfig, logger *slog.Logger, opts ...Option) (*Pool, error) {
	if logger == nil {
		logger = slog.Default()
	}
	p := &Pool{cfg: cfg, log: logger, timeout: cfg.Timeout, idleTimeout: DefaultIdleTimeout,
		maxSessions: DefaultMaxSessions, maxResponse: client.DefaultMaxResponseBytes, sessions: map[gateway.SessionKey]*entry{}, auth: auth}
	for _, o := range opts {
		o(p)
	}
	auth = p.auth
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	where := cfg.ID
	if cfg.Path != "" {
		where = cfg.Path + " (" + cfg.ID + ")"
	}
	p.transport = cfg.Transport
	if p.transport == "" {
		p.transport = TransportHTTP
		if cfg.Command != "" {
			p.transport = TransportStdio
		}
	}
	switch p.transport {
	case TransportHTTP, TransportSSE:
		if cfg.URL == "" {
			return nil, fmt.Errorf("upstream %s: url is required for transport %s; set url: to the server's MCP endpoint", where, p.transport)
		}
		if cfg.Command != "" {
			return nil, fmt.Errorf("upstream %s: command is set with transport %s; a stdio upstream has no url", where, p.transport)
		}
		var base http.RoundTripper
		if p.httpc == nil {
			header := http.Header{}
			for k, v := range cfg.Headers {
				header.Set(k, v)
			}
			httpc, own, err := client.NewAuthHTTPClient(header, auth)
			if err != nil {
				return nil, fmt.Errorf("upstream %s: %w", where, err)
			}
			p.httpc, p.base, base = httpc, own, own
			p.loop = h1.Register(own) // the fast relay's calls (FastRoute)
		} else {
			c := *p.httpc // the caller's client stays as it was
			p.httpc = &c
			base = c.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			if auth != nil && auth.Type == client.AuthOAuth2 && (auth.Discover || auth.Login) {
				// The OAuth handler's own requests (metadata, the token
				// endpoint) go out on a plain transport, as the mcp:// client's
				// do: the upstream's headers: are for the upstream alone.
				_, own, err := client.NewAuthHTTPClient(nil, auth)
				if err != nil {
					return nil, fmt.Errorf("upstream %s: %w", where, err)
				}
				p.base, base = own, own
			}
		}
		p.httpc.Transport = &upstreamTransport{base: orDefault(p.httpc.Transport), limit: p.maxResponse}
		for _, u := range append([]string{cfg.URL}, cfg.Replicas...) {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return nil, fmt.Errorf("upstream %s: %q is not an http or https URL", where, redact.URL(u))
			}
			oh, err := auth.OAuthHandler(u, base)
			if err != nil {
				return nil, fmt.Errorf("upstream %s: %w", where, err)
			}
			p.endpoints = append(p.endpoints, &endpoint{url: u, shown: redact.Secrets(redact.URL(u)), oauth: oh, healthy: true})
		}
	case TransportStdio:
		if cfg.Command == "" {
			return nil, fmt.Errorf("upstream %s: command is required for transport stdio", where)
		}
		if cfg.URL != "" || len(cfg.Replicas) > 0 {
			return nil, fmt.Errorf("upstream %s: url/replicas are set with transport stdio; use transport: http or sse for a server at a URL", where)
		}
		line := strings.Join(append([]string{cfg.Command}, cfg.Args...), " ")
		p.endpoints = []*endpoint{{url: line, shown: redact.Text(line), healthy: true}}
	default:
		return nil, fmt.Errorf("upstream %s: unknown transport %q (use http, sse or stdio)", where, cfg.Transport)
	}
	p.mode = cfg.Sessions
	switch p.mode {
	case "":
		p.mode = config.SessionsPerClient
		if p.transport == TransportStdio {
			p.mode = config.SessionsShared
		}
	case config.SessionsPerClient, config.SessionsShared, config.SessionsPerPrincipal:
	default:
		return nil, fmt.Errorf("upstream %s: unknown sessions %q (use per-client, shared or per-principal)", where, cfg.Sessions)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	interval := cfg.Health.Interval
	if interval == 0 {
		interval = DefaultHealthInterval
	}
	if interval > 0 || p.idleTimeout > 0 {
		p.wg.Add(1)
		go p.maintain(interval)
	}
	return p, nil
}

// ID is the upstream's id.
func (p *Pool) ID() string { return p.cfg.ID }

// Mode is the sharing mode in effect (config.Sessions*).
func (p *Pool) Mode() string { return p.mode }

// Transport is the transport in effect (http, sse or stdio).
func (p *Pool) Transport() string { return p.transport }

// normalize maps a request's key to the key of the session that serves it.
func (p *Pool) normalize(k gateway.SessionKey) gateway.SessionKey {
	if p.mode != config.SessionsPerClient {
		k.Downstream = ""
	}
	return k
}

// ErrClosed is returned by a closed pool.
var ErrClosed = errors.New("upstream pool is closed")

// Session returns the session serving key, opening it when there is none (or
// the one there was is lost). opts builds the client options of a new session
// (the core's notification and request handlers); it is called only when one
// is opened. Concurrent calls for the same key open one session.
func (p *Pool) Session(ctx context.Context, key gateway.SessionKey, opts func() *sdk.ClientOptions) (*sdk.ClientSession, error) {
	e, err := p.acquire(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	e.inflight--
	p.mu.Unlock()
	return e.s, nil
}

// acquire returns key's open entry with its inflight count raised (the
// caller lowers it): an entry in use is never closed as idle or evicted.
func (p *Pool) acquire(ctx context.Context, key gateway.SessionKey, opts func() *sdk.ClientOptions) (*entry, error) {
	key = p.normalize(key)
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, fmt.Errorf("upstream %s: %w", p.cfg.ID, ErrClosed)
		}
		e := p.sessions[key]
		if e != nil && !e.dead {
			p.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, fmt.Errorf("upstream %s: waiting for the session to open: %w", p.cfg.ID, ctx.Err())
			}
			p.mu.Lock()
			if e.err != nil {
				p.mu.Unlock()
				return nil, e.err
			}
			if e.dead || p.sessions[key] != e {
				p.mu.Unlock()
				continue // lost meanwhile: open another
			}
			e.inflight++
			e.lastUsed = time.Now()
			p.mu.Unlock()
			return e, nil
		}
		reopen := e != nil // a lost session is replaced
		if err := p.makeRoomLocked(key); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		ne := &entry{key: key, ready: make(chan struct{}), lastUsed: time.Now(), inflight: 1}
		p.sessions[key] = ne
		p.wg.Add(1) // under mu: Close, which waits, cannot have begun
		p.mu.Unlock()
		// The session is opened apart from the caller: a caller that gives up
		// must not fail the others waiting for the same session. It keeps the
		// caller's values (its upstream headers: under per-principal sharing
		// the session opens with the caller's credentials).
		go p.openEntry(context.WithoutCancel(ctx), ne, reopen, opts)
		select {
		case <-ne.ready:
		case <-ctx.Done():
			p.mu.Lock()
			ne.inflight--
			p.mu.Unlock()
			return nil, fmt.Errorf("upstream %s: waiting for the session to open: %w", p.cfg.ID, ctx.Err())
		}
		if ne.err != nil {
			return nil, ne.err
		}
		return ne, nil
	}
}

// openEntry opens the session of ne and closes ne.ready.
func (p *Pool) openEntry(ctx context.Context, ne *entry, reopen bool, opts func() *sdk.ClientOptions) {
	defer p.wg.Done()
	key := ne.key
	s, ep, err := p.open(ctx, opts)
	if err == nil && reopen && p.onReopen != nil {
		p.onReopen(key, s)
	}
	p.mu.Lock()
	ne.s, ne.endpoint, ne.err = s, ep, err
	if err != nil {
		if p.sessions[key] == ne {
			delete(p.sessions, key)
		}
		p.lastErr = redact.Text(err.Error())
		p.mu.Unlock()
		close(ne.ready)
		return
	}
	p.protocol = s.InitializeResult().ProtocolVersion
	if p.closed || p.sessions[key] != ne {
		// Closed or released while opening: nobody may use it.
		ne.err = fmt.Errorf("upstream %s: %w", p.cfg.ID, ErrClosed)
		if p.sessions[key] == ne {
			delete(p.sessions, key)
		}
		p.mu.Unlock()
		close(ne.ready)
		_ = s.Close()
		return
	}
	p.mu.Unlock()
	close(ne.ready)
	p.wg.Add(1)
	go p.watch(ne)
	if reopen {
		p.log.Info("upstream session reopened", "upstream", p.cfg.ID, "endpoint", ep.shown)
	}
}

// makeRoomLocked closes the least recently used idle session when opening
// one more for key would pass the cap. The one shared session never counts.
func (p *Pool) makeRoomLocked(key gateway.SessionKey) error {
	if p.maxSessions <= 0 || key == (gateway.SessionKey{}) {
		return nil
	}
	n := 0
	var lru *entry
	for k, e := range p.sessions {
		if k == (gateway.SessionKey{}) || e.dead {
			continue
		}
		n++
		if e.s != nil && e.inflight == 0 && (lru == nil || e.lastUsed.Before(lru.lastUsed)) {
			lru = e
		}
	}
	if n < p.maxSessions {
		return nil
	}
	if lru == nil {
		return fmt.Errorf("upstream %s: all %d sessions are busy; try again shortly (or raise the session cap)", p.cfg.ID, p.maxSessions)
	}
	// Marked lost rather than forgotten: its next use reopens it and tells
	// onReopen, as for any lost session.
	lru.dead = true
	go func() { _ = lru.s.Close() }()
	return nil
}

// open opens one session: on the first healthy endpoint that takes it, then
// on the others (health may be stale). Opening cannot have run anything on
// the upstream, so every endpoint may be tried.
func (p *Pool) open(ctx context.Context, opts func() *sdk.ClientOptions) (*sdk.ClientSession, *endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	var copts *sdk.ClientOptions
	if opts != nil {
		copts = opts()
	}
	c := gateway.NewUpstreamClient(&sdk.Implementation{Name: client.Name, Version: client.Version}, copts)
	var errs []error
	for _, ep := range p.candidates() {
		s, err := p.connect(ctx, c, ep)
		if err == nil {
			p.setHealth(ep, nil, false)
			return s, ep, nil
		}
		err = masked(fmt.Errorf("upstream %s at %s: %w", p.cfg.ID, ep.shown, err))
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
		p.setHealth(ep, err, false)
	}
	return nil, nil, errors.Join(errs...)
}

// candidates are the endpoints in the order a new session tries them: the
// healthy ones in their configured order, then the others.
func (p *Pool) candidates() []*endpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*endpoint, 0, len(p.endpoints))
	for _, ep := range p.endpoints {
		if ep.healthy {
			out = append(out, ep)
		}
	}
	for _, ep := range p.endpoints {
		if !ep.healthy {
			out = append(out, ep)
		}
	}
	return out
}

// connect opens a session with c at ep.
func (p *Pool) connect(ctx context.Context, c *sdk.Client, ep *endpoint) (*sdk.ClientSession, error) {
	switch p.transport {
	case TransportHTTP:
		return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ep.url, HTTPClient: p.httpc, OAuthHandler: ep.oauth,
			MaxEventSize: p.eventLimit()}, nil)
	case TransportSSE:
		t := client.NewSessionScopedTransport(&sdk.SSEClientTransport{Endpoint: ep.url, HTTPClient: p.httpc, MaxEventSize: p.eventLimit()}, p.ctx)
		return c.Connect(ctx, t, nil)
	}
	stderr := stderrLogger(p.log, p.cfg.ID)
	cmd := stdioCommand(p.cfg.Command, p.cfg.Args, p.cfg.Env, stderr)
	t, kill := newStdioTransport(cmd, p.maxResponse, p.cfg.ID)
	s, err := c.Connect(ctx, t, nil)
	if err != nil {
		// A server that started but failed the handshake must not linger.
		kill()
		_ = stderr.Close()
		if cmd.Process == nil {
			return nil, fmt.Errorf("start %s: %w", p.cfg.Command, err)
		}
		return nil, err
	}
	go func() {
		// The stderr pipe is ours: close it once the process is gone, so that
		// the logger ends.
		_ = s.Wait()
		_ = stderr.Close()
	}()
	return s, nil
}

// watch marks e lost when its connection ends without the pool closing it
// (the upstream went away, its process exited): the next use reopens it.
func (p *Pool) watch(e *entry) {
	defer p.wg.Done()
	err := e.s.Wait()
	p.mu.Lock()
	lost := p.sessions[e.key] == e && !e.dead && !p.closed
	if lost {
		e.dead = true
	}
	p.mu.Unlock()
	if lost {
		msg := "connection ended"
		if err != nil {
			msg = redact.Text(err.Error())
		}
		p.log.Warn("upstream session lost; it is reopened on next use", "upstream", p.cfg.ID, "error", msg)
	}
}

// markLost closes s, the session of key, and marks it lost, so that the next
// use opens another.
func (p *Pool) markLost(key gateway.SessionKey, s *sdk.ClientSession) {
	key = p.normalize(key)
	p.mu.Lock()
	e := p.sessions[key]
	if e != nil && e.s == s {
		e.dead = true
	}
	p.mu.Unlock()
	_ = s.Close()
}

// Release closes the session of key when it is a per-client session (the
// downstream session ended). Shared and per-principal sessions stay (closed
// when idle).
func (p *Pool) Release(key gateway.SessionKey) {
	if p.mode != config.SessionsPerClient || key.Downstream == "" {
		return
	}
	p.mu.Lock()
	e := p.sessions[key]
	if e != nil {
		delete(p.sessions, key)
	}
	p.mu.Unlock()
	if e != nil {
		go func() {
			<-e.ready
			if e.s != nil {
				_ = e.s.Close()
			}
		}()
	}
}

// Close closes every session (ending stdio processes) and stops the health
// checks. ctx bounds the wait for the sessions to close.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var sessions []*sdk.ClientSession
	for _, e := range p.sessions {
		select {
		case <-e.ready:
			if e.s != nil {
				sessions = append(sessions, e.s)
			}
		default: // the opener closes it when it sees the pool closed
		}
	}
	p.sessions = map[gateway.SessionKey]*entry{}
	p.mu.Unlock()
	p.cancel()
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, s := range sessions {
			wg.Add(1)
			go func() { defer wg.Done(); _ = s.Close() }()
		}
		wg.Wait()
		p.wg.Wait()
		for _, ep := range p.endpoints {
			if ep.probe != nil {
				_ = ep.probe.Close()
			}
		}
		if p.loop != nil {
			p.loop.Close()
		}
		if p.base != nil {
			p.base.CloseIdleConnections()
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("upstream %s: closing sessions: %w", p.cfg.ID, ctx.Err())
	}
}

// orDefault is rt, or http.DefaultTransport for nil (as http.Client reads it).
func orDefault(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport
	}
	return rt
}

// eventLimit is the SDK transports' bound on one SSE event: the pool's bound
// on an answer, plus room for the event's framing.
func (p *Pool) eventLimit() int {
	return int(min(p.maxResponse, math.MaxInt32-1<<10)) + 1<<10
}
