package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/arvenza/helix/internal/component/mcp/server/requeststate"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/component/mcp/transport"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// shutdownGrace bounds how long Stop waits for in-flight tool calls and open
// connections when its context carries no deadline.
const shutdownGrace = 10 * time.Second

// NewSDKServer builds a go-sdk server offering the tools and resources that a Helix
// server with opts would offer, for use with any go-sdk transport (in-memory
// transports in tests, a custom HTTP mux). Transport, Addr and the HTTP options of
// opts are ignored. The caller runs and closes the server.
func NewSDKServer(hc *engine.Context, opts Options) (*sdk.Server, error) {
	c := New(hc)
	if err := c.normalize(&opts); err != nil {
		return nil, err
	}
	s := &mcpServer{comp: c, opts: opts}
	srv, _, err := s.build()
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", opts.ID, err)
	}
	return srv, nil
}

// mcpServer is one declared or URI-triggered server. start and stop are called
// once each by the component.
type mcpServer struct {
	comp *Component
	opts Options

	mu     sync.Mutex
	tools  []*serverTool
	params map[string][]transport.ParamHeader // tool name → its x-mcp-header bindings
	caller *toolCaller
	subs   *subscriptions
	fast   *transport.FastToolCalls // nil unless Helix's transport answers tool calls itself
	sdk    *sdk.Server
	gate   *callGate
	ext    *ExtensionHost // nil without an Extension
	aud    *audiences     // nil without Audiences
	posts  postContexts
	// table is the session table of the running HTTP handler (console.go).
	table *transport.SessionTable
	// admission is the admission control of the running HTTP handler (nil: none).
	admission *transport.Admission
	inputs    *inputRequests // made by the first build (inputRequests)
	// answered remembers keyed calls across builds (idempotency.go).
	answeredOnce sync.Once
	answered     *answered
	ln           net.Listener
	httpSrv      *http.Server
	running      bool
	// stopping is set by beginShutdown: new tool calls and new sessions are refused.
	stopping atomic.Bool

	// taskTools are the tools that run as tasks, by name (under mu); tasks
	// serves them (tasks.go). Both nil when the app has no durable store.
	taskTools map[string]*serverTool
	tasks     *taskServer

	serveDone   chan struct{} // http: Serve returned
	stdioCancel context.CancelFunc
	stdioDone   chan struct{} // stdio: Run returned
}

// implementation is the server's identity, as its go-sdk server and its
// 2026-07-28 results name it.
func (s *mcpServer) implementation() *sdk.Implementation {
	return &sdk.Implementation{Name: s.opts.Name, Version: s.opts.Version}
}

// build resolves the tools and makes the go-sdk server.
func (s *mcpServer) build() (*sdk.Server, *callGate, error) {
	s.opts.Logger = s.comp.logger(&s.opts)
	tools, err := buildTools(s.comp.catalogue(), &s.opts)
	if err != nil {
		return nil, nil, err
	}
	set := newResourceSet(s.opts.Resources)
	subs := newSubscriptions(set, s.opts.ToolAllowed, s.opts.ResourcePollInterval, s.opts.Logger)
	sopts := &sdk.ServerOptions{
		Logger: sdkLogger(s.opts.Logger),
		// Advertise every feature explicitly, including the empty prompt list: clients
		// (and the conformance suite) probe prompts/list and logging/setLevel, and the
		// tool list may change when workflows are reloaded.
		Capabilities: &sdk.ServerCapabilities{
			//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still offered to clients in the window
			Logging:   &sdk.LoggingCapabilities{},
			Prompts:   &sdk.PromptCapabilities{},
			Resources: &sdk.ResourceCapabilities{},
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
		},
	}
	taskTools := s.offerTasks(sopts, tools)
	s.offerRelayedTasks(sopts)
	s.primitiveOptions(sopts, set, subs)
	s.extensionOptions(sopts)
	srv := sdk.NewServer(s.implementation(), sopts)
	subs.notify = func(uri string) { s.resourceUpdated(context.Background(), uri) }
	gate := newCallGate()
	// Helix's Streamable HTTP transport on a stateful server resumes streams.
	resumes := !s.opts.Stateless && s.opts.Transport != "sse" && s.opts.HTTPTransport != HTTPTransportSDK
	caller := &toolCaller{caller: tool.NewCaller(s.opts.Name), allowed: s.opts.ToolAllowed, logger: s.opts.Logger,
		gate: gate, postContext: s.posts.lookup, resumes: resumes, serverID: s.opts.ID, stats: &s.comp.calls,
		tracer: tracerOf(s.comp.hc), network: networkOf(s.opts.Transport), answered: s.answeredCalls(),
		durableTool: durableWorkflows(s.comp.hc)}
	for _, t := range tools {
		srv.AddTool(t.sdkTool(), caller.handler(t))
	}
	addWorkflowResources(srv, s.comp.hc, tools, s.opts.ToolAllowed)
	addResources(srv, set, s.opts.ToolAllowed, s.opts.Logger)
	addPrompts(srv, s.opts.Prompts, s.opts.ToolAllowed, s.opts.Logger)
	inputs, err := s.inputRequests()
	if err != nil {
		return nil, nil, err
	}
	inputs.setAsking(askingTools(s.comp.hc, tools))
	srv.AddReceivingMiddleware(resolveToolAliases(tools), askClient(s.opts.Stateless, resumes, inputs))
	if s.opts.ToolAllowed != nil {
		srv.AddReceivingMiddleware(hideDisallowedTools(s.opts.ToolAllowed), hidePrimitives(s.opts.ToolAllowed))
	}
	if s.opts.Extension != nil {
		if mw := s.opts.Extension.Middleware(); mw != nil {
			srv.AddReceivingMiddleware(mw)
		}
		if se, ok := s.opts.Extension.(SendingExtension); ok {
			srv.AddSendingMiddleware(se.SendingMiddleware())
		}
	}
	// Registered last, so outermost: they see requests as the client sent them, as
	// they do on the fast path (fastcall.go).
	srv.AddReceivingMiddleware(s.receivingMiddleware()...)
	srv.AddReceivingMiddleware(checkLogLevel) // loglevel.go
	s.mu.Lock()
	params := map[string][]transport.ParamHeader{}
	for _, t := range tools {
		if len(t.params) > 0 {
			params[t.info.Name] = t.params
		}
	}
	s.tools, s.params, s.caller, s.subs, s.taskTools = tools, params, caller, subs, taskTools
	s.mu.Unlock()
	return srv, gate, nil
}

// inputRequests builds the sealer of the server's requestStates (inputrequired.go).
// Without a configured key a random one is made, once per server and process, and
// logged as such: its states are good only on this process.
func (s *mcpServer) inputRequests() (*inputRequests, error) {
	if s.inputs != nil {
		return s.inputs, nil // a rebuild keeps the key and the used states
	}
	o := s.opts.RequestState
	key := o.Key
	var randomKey func()
	if key == nil {
		key = requeststate.RandomKey()
		logger, id := s.opts.Logger, s.opts.ID
		randomKey = sync.OnceFunc(func() {
			logger.Info("mcp server: request_state has no key, so this process made a random one: input-required calls (MCP 2026-07-28) must come back to this process; replicas behind a load balancer need a shared request_state.key",
				"server", id)
		})
	}
	var used requeststate.UsedStore
	if o.Store != "" {
		st, err := requeststate.NewRedisStore(o.Store, "helix:"+s.opts.ID)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: request_state store: %w", s.opts.ID, err)
		}
		used = st
	}
	sealer, err := requeststate.New(key, requeststate.Options{TTL: o.TTL, Used: used})
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: request_state: %w", s.opts.ID, err)
	}
	s.inputs = &inputRequests{server: s.opts.ID, sealer: sealer, postContext: s.posts.lookup, randomKey: randomKey}
	return s.inputs, nil
}

// hideDisallowedTools filters tools/list through allowed, so that a client never
// sees a tool it may not call.
func hideDisallowedTools(allowed func(context.Context, string) error) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || method != "tools/list" {
				return res, err
			}
			if lr, ok := res.(*sdk.ListToolsResult); ok {
				actx := withCallerToken(ctx, req)
				kept := lr.Tools[:0:0]
				for _, t := range lr.Tools {
					if allowed(actx, t.Name) == nil {
						kept = append(kept, t)
					}
				}
				lr.Tools = kept
			}
			return res, nil
		}
	}
}

// withCallerToken puts the OAuth token the go-sdk attached to req (verified by the
// HTTP security layer) into ctx, where ToolAllowed looks for it. Handler contexts
// do not descend from the HTTP request (except with the newest protocol version),
// so the request's Extra is the only reliable carrier.
func withCallerToken(ctx context.Context, req sdk.Request) context.Context {
	if req == nil {
		return ctx
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return security.WithTokenInfo(ctx, ex.TokenInfo)
	}
	return ctx
}

func (s *mcpServer) start(ctx context.Context) error {
	srv, gate, err := s.build()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.sdk, s.gate = srv, gate
	s.mu.Unlock()
	if err := s.attachExtension(ctx, srv); err != nil {
		return err
	}
	if s.opts.Transport == TransportStdio {
		s.startStdio()
	} else if err := s.startHTTP(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	s.opts.Logger.Info("mcp server started", "id", s.opts.ID, "name", s.opts.Name, "transport", s.opts.Transport,
		"addr", addrString(s.boundAddr()), "tools", toolNames(s.tools))
	return nil
}

func (s *mcpServer) startHTTP(ctx context.Context) error {
	// netguard.Listen: a reload hands the socket over to the next application.
	raw, err := netguard.Listen(ctx, s.opts.Addr, "mcp server "+s.opts.ID)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.opts.Addr, err)
	}
	// Connection limits and timeouts (read_timeout, max_connections …): one shared
	// implementation for every Helix listener.
	ln := netguard.NewListener(raw, s.opts.Limits, "mcp server "+s.opts.ID, s.opts.Logger)
	ln.TrustProxies(s.opts.Proxies)
	var h http.Handler = s.httpHandler()
	if s.opts.HTTPMiddleware != nil {
		h = s.opts.HTTPMiddleware(h)
	}
	hs := &http.Server{
		Handler:  s.refuseNewSessionsWhenStopping(h),
		ErrorLog: slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
	}
	netguard.Configure(hs, s.opts.Limits)
	done := make(chan struct{})
	s.mu.Lock()
	s.ln, s.httpSrv, s.serveDone = ln, hs, done
	s.mu.Unlock()
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Logger.Error("mcp server stopped serving", "id", s.opts.ID, "error", err)
		}
	}()
	return nil
}

// httpHandler routes the transports. Streamable HTTP answers at /mcp (what clients
// are told to use) and at every other path, so that mcp://host:port/tool client URIs
// reach the server whatever path they carry. The SSE transport answers at /sse
// (event stream) and /message (client posts); for transport http it is served too,
// for clients that predate Streamable HTTP.
func (s *mcpServer) httpHandler() http.Handler {
	getServer := func(*http.Request) *sdk.Server { return s.sdk }
	mux := http.NewServeMux()
	topts := s.transportOptions()
	// One session table for the server's stateful transports: limits, owners and
	// idle expiry (transport/sessions.go).
	sessions := transport.NewSessionTable(&topts)
	topts.Sessions = sessions
	// One admission control for all of them (transport/admission.go).
	topts.Admission = transport.NewAdmission(s.opts.Admission)
	s.mu.Lock()
	s.table = sessions
	s.admission = topts.Admission
	s.mu.Unlock()
	sdkServer := func() *sdk.Server { return s.sdk }
	sse := transport.NewSSEHandler(sdkServer, sessions, &topts)
	// The go-sdk tells SSE clients to post to the URL of the GET that opened the
	// stream; presenting that GET as /message makes the advertised endpoint the
	// documented /message?sessionid=… (posting to /sse?sessionid=… works as well).
	sseEntry := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			r = r.Clone(r.Context())
			r.URL.Path = "/message"
			r.URL.RawPath = ""
		}
		sse.ServeHTTP(w, r)
	})
	mux.Handle("/sse", sseEntry)
	mux.Handle("/message", sse)
	if s.opts.Transport == TransportHTTP {
		timeout := s.opts.SessionIdleTimeout
		if timeout < 0 {
			timeout = 0
		}
		var streamable http.Handler
		if s.opts.HTTPTransport == HTTPTransportSDK {
			sdkHandler := func(stateless bool) http.Handler {
				return sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{
					Stateless:                  stateless,
					SessionTimeout:             timeout,
					Logger:                     sdkLogger(s.opts.Logger),
					DisableLocalhostProtection: s.opts.DisableLocalhostProtection,
					MaxRequestBodyBytes:        s.opts.MaxRequestBodyBytes,
				})
			}
			// The go-sdk's stateful handler refuses 2026-07-28 requests; its
			// stateless one serves them, so the front sends them there.
			sessionless := sdkHandler(true)
			own := sessionless
			if !s.opts.Stateless {
				own = transport.NewSDKSessions(sdkHandler(false), sdkServer, sessions)
			}
			streamable = transport.NewSDKProtocolFront(own, sessionless, &topts)
		} else {
			if s.opts.FastToolCallsOn() {
				s.mu.Lock()
				fc := newFastCaller(s.caller, s.tools)
				fc.ext = s.ext
				topts.Fast = transport.NewFastToolCalls(fc.call, s.receivingMiddleware())
				topts.Fast.Exclude(askingTools(s.comp.hc, s.tools)...) // client_requests.go
				if s.ext != nil {
					topts.Fast.ExcludeWhen(s.ext.slowPath) // gateway.go
				}
				topts.Fast.AnswerNewEra(s.implementation())
				s.answerRaw(topts.Fast) // gateway_fast.go
				s.fast = topts.Fast
				s.mu.Unlock()
			}
			streamable = transport.NewStreamableHandler(s.sdk, &topts)
		}
		h := s.posts.track(streamable)
		if s.aud != nil {
			h = s.aud.tag(h)
		}
		mux.Handle("/mcp", h)
		mux.Handle("/", h)
	} else {
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "this MCP server speaks the SSE transport: open GET /sse", http.StatusNotFound)
		})
	}
	return mux
}

// transportOptions are the options of the server's HTTP transports.
func (s *mcpServer) transportOptions() transport.Options {
	park := time.Duration(0) // the transport's default
	if s.opts.Extension != nil {
		// A gateway keeps per-client state (upstream sessions, levels, roots) by
		// go-sdk session and releases it when that session ends: its sessions
		// are never parked.
		park = -1
	}
	return transport.Options{
		ParkIdleAfter:              park,
		Stateless:                  s.opts.Stateless,
		SessionIdleTimeout:         s.opts.SessionIdleTimeout,
		MaxRequestBodyBytes:        s.opts.MaxRequestBodyBytes,
		DisableLocalhostProtection: s.opts.DisableLocalhostProtection,
		MaxSessions:                s.opts.MaxSessions,
		MaxSessionsPerPrincipal:    s.opts.MaxSessionsPerPrincipal,
		MaxConcurrentCalls:         s.opts.MaxConcurrentCalls,
		ChargeCalls:                s.opts.ChargeCalls,
		Logger:                     s.opts.Logger,
		ParamHeaders:               s.paramHeaders,
		Tasks:                      s.taskRequests(),
	}
}

// paramHeaders returns the x-mcp-header bindings of the tool named name (nil for
// an unknown tool: the session answers that call).
func (s *mcpServer) paramHeaders(name string) []transport.ParamHeader {
	s.mu.Lock()
	own, ok := s.params[name]
	ext := s.ext
	s.mu.Unlock()
	if ok || ext == nil {
		return own
	}
	return ext.paramHeaders(name) // an upstream's tool (gateway.go)
}

func (s *mcpServer) startStdio() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.mu.Lock()
	s.stdioCancel, s.stdioDone = cancel, done
	s.mu.Unlock()
	drain := transport.NewStdioDrain(s.opts.Stdin, s.opts.Stdout)
	// Helix's stdio connection (stdio_conn.go): a malformed line is answered, not
	// the end of the session; ids are echoed exactly.
	t := transport.NewStdioTransport(drain, drain, s.opts.Stdin, drain, s.opts.Logger)
	go func() {
		defer close(done)
		defer drain.Stop()
		stopWaiting := context.AfterFunc(ctx, drain.Stop)
		defer stopWaiting()
		err := s.sdk.Run(ctx, t)
		if ctx.Err() == nil {
			// The client closed our input: a subprocess server has nothing left to do.
			if err != nil && !errors.Is(err, io.EOF) {
				s.opts.Logger.Warn("mcp stdio server ended", "id", s.opts.ID, "error", err)
			} else {
				s.opts.Logger.Info("mcp stdio client disconnected", "id", s.opts.ID)
			}
			s.comp.signalDone()
		}
	}()
}

// CodeShuttingDown is the JSON-RPC error code of a request refused because the
// server is stopping: the first implementation-defined server error. Not -32004,
// the go-sdk's "server is closing": its clients take that code for a closed
// connection and fail every call still running in the session.
const CodeShuttingDown = -32000

// shuttingDownError answers a tools/call that arrives once the server is stopping.
func shuttingDownError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeShuttingDown, Message: "server is shutting down"}
}

// BeginShutdown is the first step of stopping, for the application to take before
// it drains in-flight exchanges: every running server refuses new tools/call
// requests (JSON-RPC error CodeShuttingDown, "server is shutting down") and new
// sessions (HTTP 503), while the calls already running go on. Stop (of the component, or of an mcp-server:// trigger)
// then waits for them and closes the servers.
func (c *Component) BeginShutdown() {
	c.mu.Lock()
	all := make([]*mcpServer, 0, len(c.running))
	for _, s := range c.running {
		all = append(all, s)
	}
	c.mu.Unlock()
	for _, s := range all {
		s.beginShutdown()
	}
}

func (s *mcpServer) beginShutdown() {
	s.stopping.Store(true)
	s.posts.draining.Store(true)
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		gate.close()
	}
	// Keep-alive stays on: switching it off closes idle connections at once, and a
	// client that is just sending its next request on one gets a reset instead of
	// the clear "shutting down" answer. Shutdown closes them at the end.
}

// refuseNewSessionsWhenStopping answers 503 to requests that would open a session
// once the server is stopping: a Streamable HTTP POST without Mcp-Session-Id on a
// stateful server (initialize) and GET /sse. Requests of existing sessions go on;
// their new tools/call requests get the JSON-RPC error instead (toolCaller.refusal).
func (s *mcpServer) refuseNewSessionsWhenStopping(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.stopping.Load() && s.opensSession(r) {
			w.Header().Set("Connection", "close")
			if r.Method == http.MethodPost {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"server is shutting down"}}`+"\n", CodeShuttingDown)
				return
			}
			http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *mcpServer) opensSession(r *http.Request) bool {
	switch r.URL.Path {
	case "/sse":
		return r.Method == http.MethodGet
	case "/message":
		return false
	}
	// A 2026-07-28 request (by its header) opens none: it is served sessionless.
	return s.opts.Transport == TransportHTTP && !s.opts.Stateless &&
		r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" &&
		r.Header.Get("Mcp-Protocol-Version") < "2026-07-28"
}

// stop refuses new tool calls, waits (within ctx's deadline, or shutdownGrace) for
// running ones, then closes sessions and connections.
func (s *mcpServer) stop(ctx context.Context) error {
	s.beginShutdown()
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return nil
	}
	s.running = false
	gate, hs, serveDone := s.gate, s.httpSrv, s.serveDone
	cancelStdio, stdioDone := s.stdioCancel, s.stdioDone
	s.mu.Unlock()

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, shutdownGrace)
		defer cancel()
	}
	var errs []error
	// Calls first: while running ones finish, the listener stays open and new calls
	// get a clear "shutting down" tool error instead of a refused connection, which
	// most clients would report as a broken session.
	if err := gate.closeAndWait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("tool calls still running: %w", err))
	}
	// A finished call's result is written to its POST after the handler returns;
	// let those answers (and any "shutting down" refusals) go out before closing.
	_ = s.posts.active.wait(ctx)
	// Closing the sessions ends the long-lived SSE streams, so that Shutdown only
	// waits for requests that are about to finish. A stdio session is ended by
	// cancelling its Run below, on the goroutine that connected it: closing it
	// from here could meet the go-sdk still connecting it (a data race inside
	// the SDK, between binding the session and closing its connection).
	if hs != nil {
		for ss := range s.sdk.Sessions() {
			_ = ss.Close()
		}
	}
	if hs != nil {
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		<-serveDone
	}
	if cancelStdio != nil {
		cancelStdio()
		select {
		case <-stdioDone:
		case <-ctx.Done():
			// A blocking read on the process's real stdin cannot be interrupted; the
			// goroutine ends with the process.
			s.opts.Logger.Warn("mcp stdio server: input still blocked at stop", "id", s.opts.ID)
		}
	}
	s.mu.Lock()
	subs := s.subs
	s.mu.Unlock()
	if subs != nil {
		subs.close()
	}
	if s.opts.Extension != nil {
		if err := s.opts.Extension.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	s.opts.Logger.Info("mcp server stopped", "id", s.opts.ID)
	return errors.Join(errs...)
}

func (s *mcpServer) boundAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

func (s *mcpServer) info() Info {
	s.mu.Lock()
	running, tools := s.running, s.tools
	s.mu.Unlock()
	if !running {
		// Not running: show what it would expose now (the tools that resolve).
		tools, _ = buildTools(s.comp.catalogue(), &s.opts)
	}
	return s.infoWith(tools)
}

func (s *mcpServer) infoWith(tools []*serverTool) Info {
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	si := Info{ID: s.opts.ID, Name: s.opts.Name, Version: s.opts.Version, Transport: s.opts.Transport,
		Addr: s.opts.Addr, Stateless: s.opts.Stateless, Running: running}
	if a := s.boundAddr(); running && a != nil {
		si.Addr = a.String()
	}
	for _, t := range tools {
		si.Tools = append(si.Tools, t.info)
	}
	if len(s.opts.Resources) > 0 {
		si.Resources = resourceInfos(s.opts.Resources)
	}
	if len(s.opts.Prompts) > 0 {
		si.Prompts = promptInfos(s.opts.Prompts)
	}
	return si
}

// sdkLogger passes the go-sdk's warnings and errors on; its per-session Info lines
// (connecting, initialized, disconnected) would drown Helix's own logs.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(minLevelHandler{Handler: l.Handler(), min: slog.LevelWarn})
}

type minLevelHandler struct {
	slog.Handler
	min slog.Level
}

func (h minLevelHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min && h.Handler.Enabled(ctx, level)
}

func (h minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevelHandler{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{Handler: h.Handler.WithGroup(name), min: h.min}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// postContexts lets a tool call see the HTTP request that carries it. The go-sdk
// does not derive handler contexts from the POST for protocol versions before
// 2026-07-28, so without this a stateless server would keep running a workflow
// whose caller has hung up (nobody can send it notifications/cancelled: the
// next POST lands in another temporary session). A POST that is gone cannot
// receive the result, so the call is cancelled with it.
type postContexts struct {
	next   atomic.Uint64
	m      postTable // tag → context.Context of the POST (postcontexts.go)
	active callGate  // POSTs being answered; never closed
	// draining is set when the server begins to stop: answers are then flushed
	// before the POST counts as done, so that they are on the wire before stop
	// closes the sessions (a client that sees its session end first may drop them).
	draining atomic.Bool
}

// postTagHeader is set by the server on each incoming request (overwriting any
// value a client sent) and read back from the tool request's headers.
const postTagHeader = "X-Helix-Mcp-Post"

func (p *postContexts) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			r.Header.Del(postTagHeader)
			next.ServeHTTP(w, r)
			return
		}
		p.active.enter()
		defer p.active.leave()
		n := p.next.Add(1)
		r.Header.Set(postTagHeader, strconv.FormatUint(n, 36))
		p.m.store(n, r.Context())
		defer p.m.delete(n)
		next.ServeHTTP(w, r)
		if p.draining.Load() {
			_ = http.NewResponseController(w).Flush()
		}
	})
}

func (p *postContexts) lookup(h http.Header) context.Context {
	if h == nil {
		return nil
	}
	tag := h.Get(postTagHeader)
	if tag == "" {
		return nil
	}
	return p.m.load(tag)
}

// callGate counts running work (tool calls, POST requests); once closed it refuses
// new work, so that stop can wait for exactly what was admitted. Every call enters
// and leaves two gates (the server's and its POSTs'), so the count is one atomic
// word rather than a mutex all clients' calls would queue on; the mutex is taken
// only when the count drops to zero, to wake a waiter.
type callGate struct {
	// state is twice the number of running calls, plus 1 once closed.
	state atomic.Int64
	mu    sync.Mutex
	zero  chan struct{} // closed when the count drops to 0; nil when no one waits
}

func newCallGate() *callGate { return &callGate{} }

func (g *callGate) enter() bool {
	for {
		s := g.state.Load()
		if s&1 != 0 {
			return false
		}
		if g.state.CompareAndSwap(s, s+2) {
			return true
		}
	}
}

func (g *callGate) leave() {
	if g.state.Add(-2)>>1 != 0 {
		return
	}
	// wait checks the count and sets zero under mu, so it either saw this
	// decrement or left zero for this close.
	g.mu.Lock()
	if g.zero != nil && g.state.Load()>>1 == 0 {
		close(g.zero)
		g.zero = nil
	}
	g.mu.Unlock()
}

// wait blocks until nothing is running or ctx ends.
func (g *callGate) wait(ctx context.Context) error {
	g.mu.Lock()
	if g.state.Load()>>1 == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.zero == nil {
		g.zero = make(chan struct{})
	}
	ch := g.zero
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *callGate) closeAndWait(ctx context.Context) error {
	g.close()
	return g.wait(ctx)
}

// close refuses new work from now on.
func (g *callGate) close() { g.state.Or(1) }

func (g *callGate) isClosed() bool { return g.state.Load()&1 != 0 }

// answeredCalls returns the server's memory of keyed calls, the same for every
// build of its tools (a reload does not forget them).
func (s *mcpServer) answeredCalls() *answered {
	s.answeredOnce.Do(func() { s.answered = newAnswered() })
	return s.answered
}
