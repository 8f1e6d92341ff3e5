package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/redact"
)

// Defaults of the gateway.
const (
	// DefaultTimeout bounds one request to an upstream (UpstreamConfig.Timeout).
	DefaultTimeout = 60 * time.Second
	// DiscoveryTimeout bounds the first listing of an upstream at start.
	DiscoveryTimeout = 30 * time.Second
	// rediscoverEvery is how often an upstream whose discovery failed is tried again.
	rediscoverEvery = 10 * time.Second
)

// Options build a Gateway: the upstreams of one MCP server entry and the parts
// that govern calls to them. Zero parts mean the defaults: AllowAll, NoAudit,
// GatewayCredentials, DirectPool, PrincipalOf.
type Options struct {
	// ServerID is the MCP server's id (Call.Server, Record.Server).
	ServerID  string
	Upstreams []config.UpstreamConfig
	// NewPool makes each upstream's session pool; HTTPClient the HTTP client of
	// an http or sse upstream (its headers: and auth:).
	NewPool    NewPoolFunc
	HTTPClient func(config.UpstreamConfig) (*http.Client, error)
	Guard      Guard
	Auditor    Auditor
	// OpenAuditor, when set, makes the Auditor when the server starts (an
	// auditor holds a queue and a spool while it runs); it wins over Auditor.
	OpenAuditor func() (Auditor, error)
	// Credentials makes the Credentials of each upstream.
	Credentials func(config.UpstreamConfig) (Credentials, error)
	// Principal names the caller of a request from the HTTP request's context
	// (nil outside HTTP) and headers.
	Principal func(rctx context.Context, h http.Header) *Principal
	// Scrub, when set, takes the upstream's credentials out of what it says
	// back (errors, tool error texts): sent are the headers the call carried.
	// creds.Scrub is the one pkg/app sets.
	Scrub func(u config.UpstreamConfig, sent http.Header, err error) error
	// Policies is how many policies the Guard has, for Status.
	Policies int
	Logger   *slog.Logger
}

// Gateway serves the upstreams of one MCP server beside its own tools: it is
// the server's Extension (see server.Extension).
type Gateway struct {
	opts   Options
	guard  Guard
	audit  Auditor
	logger *slog.Logger
	ups    []*upstream
	// tasks are the MCP Tasks the gateway relayed, by id (tasks.go).
	tasks taskTable

	host   *server.ExtensionHost // set by Attach
	ctx    context.Context       // ends at Close: background discovery and refreshes
	cancel context.CancelFunc
	bgMu   sync.Mutex // guards closed and bg.Add against Close's bg.Wait
	closed bool
	bg     sync.WaitGroup

	// owners of served names, across upstreams (under mu): the first upstream
	// that serves a resource URI or template keeps it.
	mu        sync.Mutex
	resources map[string]*upstream
	templates map[string]*upstream
	prompts   map[string]*upstream // served prompt name → upstream

	relay relayState
	roots rootsState // clienthook.go
}

var _ server.Extension = (*Gateway)(nil)

// upstream is one configured upstream and what it serves now.
type upstream struct {
	cfg      config.UpstreamConfig
	prefix   string
	sessions string
	pool     Pool
	creds    Credentials
	timeout  time.Duration

	mu         sync.Mutex
	tools      map[string]string    // served name → the upstream's name
	defs       map[string]*sdk.Tool // served name → the tool as served (console.go)
	prompts    map[string]string
	resources  map[string]bool // URIs served
	templates  map[string]bool
	discovered bool
	lastErr    string
	protocol   string // negotiated by the discovery session
	refreshing bool   // a refresh runs; another was asked for when again is set
	again      bool
}

// New builds the gateway of one server. Nothing is connected until Attach.
func New(o Options) (*Gateway, error) {
	g := &Gateway{opts: o, guard: o.Guard, audit: o.Auditor, logger: o.Logger,
		resources: map[string]*upstream{}, templates: map[string]*upstream{}, prompts: map[string]*upstream{}}
	if g.guard == nil {
		g.guard = AllowAll{}
	}
	if g.audit == nil {
		g.audit = NoAudit{}
	}
	if g.logger == nil {
		g.logger = slog.Default()
	}
	if g.opts.Principal == nil {
		g.opts.Principal = PrincipalOf
	}
	if g.opts.NewPool == nil {
		g.opts.NewPool = DirectPool
	}
	g.relay.init()
	for _, uc := range o.Upstreams {
		up := &upstream{cfg: uc, timeout: uc.Timeout, tools: map[string]string{}, prompts: map[string]string{},
			resources: map[string]bool{}, templates: map[string]bool{}}
		up.prefix = uc.ID + "."
		if uc.Prefix != nil {
			up.prefix = *uc.Prefix
		}
		if up.timeout <= 0 {
			up.timeout = DefaultTimeout
		}
		up.sessions = uc.Sessions
		if up.sessions == "" {
			up.sessions = config.SessionsPerClient
			if uc.Transport == config.UpstreamStdio {
				up.sessions = config.SessionsShared
			}
		}
		up.creds = GatewayCredentials{}
		if o.Credentials != nil {
			var err error
			if up.creds, err = o.Credentials(uc); err != nil {
				return nil, fmt.Errorf("upstream %s: credentials: %w", uc.ID, err)
			}
		}
		g.ups = append(g.ups, up)
	}
	return g, nil
}

// open makes what the gateway holds while it runs (started at Attach, so that
// building a configuration only to check it opens nothing): each upstream's
// session pool and the auditor.
func (g *Gateway) open() error {
	if g.opts.OpenAuditor != nil {
		a, err := g.opts.OpenAuditor()
		if err != nil {
			return err
		}
		g.audit = a
	}
	for _, up := range g.ups {
		var hc *http.Client
		if up.cfg.Transport != config.UpstreamStdio {
			var err error
			if g.opts.HTTPClient != nil {
				hc, err = g.opts.HTTPClient(up.cfg)
			} else {
				hc, err = plainHTTPClient(up.cfg)
			}
			if err != nil {
				return fmt.Errorf("upstream %s: %w", up.cfg.ID, err)
			}
			hc = g.relay.count.countingClient(hc, g.relay.prefix)
		}
		pool, err := g.opts.NewPool(up.cfg, hc)
		if err != nil {
			return fmt.Errorf("upstream %s: %w", up.cfg.ID, err)
		}
		up.mu.Lock() // Upstreams (console.go) reads it from another goroutine
		up.pool = pool
		up.mu.Unlock()
	}
	return nil
}

// plainHTTPClient carries an upstream's headers: (auth: needs the mcp://
// client's machinery, which pkg/app passes as Options.HTTPClient).
func plainHTTPClient(uc config.UpstreamConfig) (*http.Client, error) {
	if uc.Auth != nil {
		return nil, errors.New("auth: needs Options.HTTPClient")
	}
	h := http.Header{}
	for k, v := range uc.Headers {
		h.Set(k, v)
	}
	return &http.Client{Transport: &staticHeaders{base: http.DefaultTransport, header: h}}, nil
}

type staticHeaders struct {
	base   http.RoundTripper
	header http.Header
}

func (t *staticHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.header) == 0 {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range t.header {
		r.Header[k] = vs
	}
	return t.base.RoundTrip(r)
}

// Attach discovers every upstream (at once, in parallel) and serves what they
// offer through host. An upstream that cannot be reached is logged and tried
// again in the background; a name clash with Helix's own tools stops the start.
func (g *Gateway) Attach(ctx context.Context, host *server.ExtensionHost) error {
	g.host = host
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := g.open(); err != nil {
		return err
	}
	errs := make([]error, len(g.ups))
	var wg sync.WaitGroup
	for i, up := range g.ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(g.ctx, min(up.timeout, DiscoveryTimeout))
			defer cancel()
			errs[i] = g.discover(dctx, up)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		var clash *server.NameClashError
		if errors.As(err, &clash) {
			return fmt.Errorf("upstream %s: %w", g.ups[i].cfg.ID, err)
		}
		if err != nil {
			g.logger.Warn(fmt.Sprintf("gateway upstream %s: not reached; trying again in the background", g.ups[i].cfg.ID),
				"server", g.opts.ServerID, "upstream", g.ups[i].cfg.ID, "error", redact.URLsIn(err.Error()),
				"hint", "check the upstream's url or command, and its auth: or headers: (helix gateway add NAME URL tries one)")
			g.rediscover(g.ups[i])
		}
	}
	return nil
}

// background runs fn in a goroutine that Close waits for; nothing runs once
// the gateway is closing.
func (g *Gateway) background(fn func()) {
	g.bgMu.Lock()
	defer g.bgMu.Unlock()
	if g.closed {
		return
	}
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		fn()
	}()
}

// rediscover tries an upstream's discovery again until it works or the gateway closes.
func (g *Gateway) rediscover(up *upstream) {
	g.background(func() {
		t := time.NewTicker(rediscoverEvery)
		defer t.Stop()
		for {
			select {
			case <-g.ctx.Done():
				return
			case <-t.C:
			}
			dctx, cancel := context.WithTimeout(g.ctx, min(up.timeout, DiscoveryTimeout))
			err := g.discover(dctx, up)
			cancel()
			if err == nil {
				return // discover said what it found
			}
		}
	})
}

// Close stops the background work, closes the upstream sessions and flushes
// the audit.
func (g *Gateway) Close(ctx context.Context) error {
	g.bgMu.Lock()
	g.closed = true
	g.bgMu.Unlock()
	if g.cancel != nil {
		g.cancel()
	}
	g.bg.Wait()
	var errs []error
	for _, up := range g.ups {
		if up.pool == nil {
			continue
		}
		if err := up.pool.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("upstream %s: %w", up.cfg.ID, err))
		}
	}
	if err := g.audit.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("audit: %w", err))
	}
	if c, ok := g.guard.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("policies: %w", err))
		}
	}
	return errors.Join(errs...)
}

// UpstreamStatus is what Status says about one upstream.
type UpstreamStatus struct {
	ID        string `json:"id"`
	Transport string `json:"transport"`
	// Endpoint is the URL (without credentials) or the command.
	Endpoint  string `json:"endpoint"`
	Reached   bool   `json:"reached"`
	Error     string `json:"error,omitempty"`
	Tools     int    `json:"tools"`
	Prompts   int    `json:"prompts"`
	Resources int    `json:"resources"`
	Templates int    `json:"templates"`
	// Sessions: the upstream sessions open now (stdio: processes); Protocol:
	// the version the upstream negotiated. Known when the pool can tell.
	Sessions int    `json:"sessions"`
	Protocol string `json:"protocol,omitempty"`
}

// Status describes the gateway's upstreams and policies.
type Status struct {
	Upstreams []UpstreamStatus `json:"upstreams"`
	Policies  int              `json:"policies"`
}

// Status reports the upstreams: reached or not, and what each serves now.
func (g *Gateway) Status() Status {
	st := Status{Policies: g.opts.Policies}
	for _, up := range g.ups {
		up.mu.Lock()
		s := UpstreamStatus{ID: up.cfg.ID, Transport: up.cfg.Transport, Endpoint: endpointOf(up.cfg), Reached: up.discovered,
			Error: up.lastErr, Protocol: up.protocol, Tools: len(up.tools), Prompts: len(up.prompts), Resources: len(up.resources), Templates: len(up.templates)}
		up.mu.Unlock()
		if sc, ok := up.pool.(sessionCounter); ok {
			s.Sessions = sc.OpenSessions()
		}
		st.Upstreams = append(st.Upstreams, s)
	}
	return st
}

// Tools returns the served names of the upstream tools, sorted.
func (g *Gateway) Tools() []string {
	var out []string
	for _, up := range g.ups {
		up.mu.Lock()
		for n := range up.tools {
			out = append(out, n)
		}
		up.mu.Unlock()
	}
	sort.Strings(out)
	return out
}

// Middleware filters listings per caller (Guard.Visible) and relays
// logging/setLevel to the caller's upstream sessions.
func (g *Gateway) Middleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			switch method {
			case "notifications/roots/list_changed":
				if ss, _ := req.GetSession().(*sdk.ServerSession); ss != nil {
					g.rootsChanged(ss)
				}
			case "logging/setLevel":
				ss, _ := req.GetSession().(*sdk.ServerSession)
				//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
				if p, ok := req.GetParams().(*sdk.SetLoggingLevelParams); ok && p != nil {
					g.setLevel(ctx, ss, p.Level)
				}
			case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
				if _, allowAll := g.guard.(AllowAll); !allowAll {
					g.filterList(ctx, req, res)
				}
			}
			return res, nil
		}
	}
}

// filterList hides from a listing the upstream primitives its caller may not see.
func (g *Gateway) filterList(ctx context.Context, req sdk.Request, res sdk.Result) {
	p := g.principal(req)
	visible := func(kind Kind, name string, ours bool) bool {
		return !ours || g.guard.Visible(ctx, p, kind, name)
	}
	switch lr := res.(type) {
	case *sdk.ListToolsResult:
		kept := lr.Tools[:0:0]
		for _, t := range lr.Tools {
			if visible(KindTool, t.Name, g.servesTool(t.Name)) {
				kept = append(kept, t)
			}
		}
		lr.Tools = kept
	case *sdk.ListPromptsResult:
		kept := lr.Prompts[:0:0]
		for _, pr := range lr.Prompts {
			if visible(KindPrompt, pr.Name, g.promptOwner(pr.Name) != nil) {
				kept = append(kept, pr)
			}
		}
		lr.Prompts = kept
	case *sdk.ListResourcesResult:
		kept := lr.Resources[:0:0]
		for _, r := range lr.Resources {
			if visible(KindResource, r.URI, g.resourceOwner(r.URI) != nil) {
				kept = append(kept, r)
			}
		}
		lr.Resources = kept
	case *sdk.ListResourceTemplatesResult:
		kept := lr.ResourceTemplates[:0:0]
		for _, t := range lr.ResourceTemplates {
			g.mu.Lock()
			ours := g.templates[t.URITemplate] != nil
			g.mu.Unlock()
			if visible(KindResource, t.URITemplate, ours) {
				kept = append(kept, t)
			}
		}
		lr.ResourceTemplates = kept
	}
}

func (g *Gateway) servesTool(name string) bool {
	for _, up := range g.ups {
		up.mu.Lock()
		_, ok := up.tools[name]
		up.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

func (g *Gateway) promptOwner(name string) *upstream {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.prompts[name]
}

func (g *Gateway) resourceOwner(uri string) *upstream {
	g.mu.Lock()
	up := g.resources[uri]
	g.mu.Unlock()
	if up == nil {
		up = g.templateOwner(uri)
	}
	return up
}

// principal is the caller of req.
func (g *Gateway) principal(req sdk.Request) *Principal {
	var h http.Header
	if req != nil {
		if ex := req.GetExtra(); ex != nil {
			h = ex.Header
		}
	}
	var rctx context.Context
	if g.host != nil {
		rctx = g.host.RequestContext(req)
	}
	if rctx == nil && req != nil {
		// No HTTP request to read (SSE posts, stdio): the go-sdk's token info.
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			rctx = security.WithTokenInfo(context.Background(), ex.TokenInfo)
		}
	}
	p := g.opts.Principal(rctx, h)
	if p == nil {
		p = &Principal{}
	}
	return p
}
