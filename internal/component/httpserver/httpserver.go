// Package httpserver implements http-server://host:port/path: a consumer that turns
// HTTP requests into InOut exchanges and their results into HTTP responses.
//
// Workflows whose triggers name the same host:port share one listener (reference
// counted: it opens with the first consumer and closes with the last). Each path is
// matched exactly ("/research" does not match "/research/x"); unknown paths get 404,
// a path served for other methods only gets 405. The options (httpMethod,
// maxBodyBytes, consumes, and the listener options of internal/netguard, which belong to
// the host:port, so workflows that share a listener must give the same values or
// leave them out) and headers are declared in spec.go ([Spec]).
//
// Request → exchange: the body is the request body as a string, or, when the
// Content-Type is JSON, the decoded map/list (an empty body is nil). A body labelled
// JSON that does not parse is answered 400 without running the workflow: requests
// the workflow cannot read are the client's mistake, not a 500. Headers are the
// request headers (first value of each; inbound headers starting with "Helix" are
// dropped so clients cannot forge internal ones) plus HelixHttpMethod, HelixHttpPath
// and HelixHttpQuery (the raw query string).
//
// Exchange → response: the status is HelixHttpResponseCode when set (an int or a
// numeric string), else 200. A failed pipeline answers {"error": "message"} (plus
// "errors" when the error carries details, such as the fields a schema rejected)
// with the 4xx/5xx HelixHttpResponseCode it set before failing (a step that found
// the request unusable says 400), else the status the error describes
// (exchange.HTTPStatus: the workflow's on_error override, a component's own
// classification — 409 for a unique violation, 422 for a schema violation — 504 for
// a timeout), else 500.
// string and []byte bodies are written as they are; maps, lists, numbers and bools as
// JSON with Content-Type application/json. A Content-Type the workflow set wins (a
// Content-Type inherited unchanged from the request is kept only when it still fits a
// text body, that is when the request was JSON and the body still parses as JSON).
// Other headers the workflow added or changed are copied to the response, except
// Helix headers and connection/framing headers.
//
// Port 0 binds a free port; [Component.Addr] reports it.
package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	helixhttp "github.com/arvenza/helix/internal/component/http"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// DefaultMaxBodyBytes is the request body limit when maxBodyBytes is not set.
const DefaultMaxBodyBytes = 10 << 20

// DefaultStopTimeout bounds a consumer's Stop when its context has no deadline.
const DefaultStopTimeout = 30 * time.Second

// Server timeouts and connection limits are netguard's (readTimeout, idleTimeout,
// writeTimeout, maxConnections, maxConnectionsPerIp). Its write timeout starts with
// the response, so a workflow that calls a model for minutes is not cut off; a
// client that gives up cancels the exchange instead.

// Component is the http-server:// component: a registry of listeners shared by the
// consumers of one engine context. Safe for concurrent use.
type Component struct {
	logger func() *slog.Logger

	mu        sync.Mutex
	listeners map[string]*listener // by host:port as written in the URIs
}

var (
	_ component.Component = (*Component)(nil)
	_ component.Lifecycle = (*Component)(nil)
)

// New returns a component that logs to the logger that logger() returns at that
// moment (slog.Default when logger is nil).
func New(logger func() *slog.Logger) *Component {
	if logger == nil {
		logger = slog.Default
	}
	return &Component{logger: logger, listeners: map[string]*listener{}}
}

// Addr returns the address the listener for hostport (as written in the URIs, e.g.
// "127.0.0.1:0") is bound to, while at least one consumer on it is started.
func (c *Component) Addr(hostport string) (net.Addr, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.listeners[strings.ToLower(hostport)]
	if !ok {
		return nil, false
	}
	return l.ln.Addr(), true
}

// Start is part of component.Lifecycle; listeners open with their first consumer.
func (c *Component) Start(context.Context) error { return nil }

// Stop closes listeners whose consumers were not all stopped (a safety net: normally
// the last consumer's Stop closes its listener).
func (c *Component) Stop(ctx context.Context) error {
	c.mu.Lock()
	ls := make([]*listener, 0, len(c.listeners))
	for k, l := range c.listeners {
		ls = append(ls, l)
		delete(c.listeners, k)
	}
	c.mu.Unlock()
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.shutdown(ctx))
	}
	return errors.Join(errs...)
}

// uriOptions are the URI's options (see Spec).
type uriOptions struct {
	HTTPMethod          string   `option:"httpMethod"`
	MaxBodyBytes        int64    `option:"maxBodyBytes"`
	Consumes            []string `option:"consumes"`
	AllowedHosts        []string `option:"allowedHosts"`
	AllowedHostsGiven   bool     `option:"allowedHosts,given"`
	TrustedProxies      []string `option:"trustedProxies"`
	TrustedProxiesGiven bool     `option:"trustedProxies,given"`
	ProxyProtocol       bool     `option:"proxyProtocol"`
	ProxyProtocolGiven  bool     `option:"proxyProtocol,given"`
	netguard.URIOptions
}

var uriBinding = component.Bind[uriOptions](Spec)

// CreateEndpoint validates the address and options; nothing binds until a consumer starts.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
		return nil, fmt.Errorf("%s: want http-server://host:port/path (for example http-server://0.0.0.0:8080/orders)", u.Raw)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	opts, err := uriBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	method := strings.ToUpper(opts.HTTPMethod)
	for _, r := range method {
		if r < 'A' || r > 'Z' {
			return nil, fmt.Errorf("option httpMethod=%q is not an HTTP method", method)
		}
	}
	maxBody := opts.MaxBodyBytes
	if maxBody <= 0 {
		return nil, fmt.Errorf("option maxBodyBytes=%d must be a positive number of bytes", maxBody)
	}
	consumes, err := parseConsumes(opts.Consumes)
	if err != nil {
		return nil, err
	}
	hosts, err := parseAllowedHosts(opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	proxies, err := parseProxyOptions(opts.TrustedProxies, opts.ProxyProtocol)
	if err != nil {
		return nil, err
	}
	limits, limitsSet, err := opts.Limits()
	if err != nil {
		return nil, err
	}
	return &endpoint{c: c, raw: u.Raw, addr: strings.ToLower(u.Host), path: path, method: method, maxBody: maxBody, consumes: consumes,
		limits: limits, limitsSet: limitsSet, hosts: hosts, hostsSet: opts.AllowedHostsGiven,
		proxies: proxies, proxiesSet: opts.TrustedProxiesGiven || opts.ProxyProtocolGiven}, nil
}

// parseConsumes reads the consumes option: a comma-separated list of media types
// (application/json, text/csv …); empty or */* means any.
func parseConsumes(vs []string) ([]string, error) {
	var out []string
	for _, v := range vs {
		for _, t := range strings.Split(v, ",") {
			t = strings.ToLower(strings.TrimSpace(t))
			mt, _, err := mime.ParseMediaType(t)
			if err != nil || !strings.Contains(mt, "/") {
				return nil, fmt.Errorf("option consumes=%q: want media types such as application/json or text/csv, comma-separated", v)
			}
			if mt == "*/*" {
				return nil, nil
			}
			out = append(out, mt)
		}
	}
	return out, nil
}

type endpoint struct {
	c       *Component
	raw     string
	addr    string
	path    string
	method  string
	maxBody int64
	// consumes lists the media types requests may have (nil: any).
	consumes []string
	// limits are the listener options of the URI; limitsSet: any was given.
	limits    netguard.Limits
	limitsSet bool
	// hosts is the allowedHosts listener option; hostsSet: it was given.
	hosts    hostPolicy
	hostsSet bool
	// proxies are the trustedProxies and proxyProtocol listener options.
	proxies    netguard.ProxyOptions
	proxiesSet bool
}

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) {
	return nil, component.ErrConsumerOnly
}

func (e *endpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	if p == nil {
		return nil, errors.New("http-server: consumer needs a processor")
	}
	return &consumer{e: e, p: p}, nil
}

// acquire returns the listener for e's address, opening it for the first user
// with e's listener options. A later endpoint that gives other options is refused:
// a running listener cannot change its limits.
func (c *Component) acquire(ctx context.Context, e *endpoint) (*listener, error) {
	addr := e.addr
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.listeners[addr]; ok {
		if e.limitsSet && e.limits.Resolved() != l.limits {
			return nil, fmt.Errorf("listener options %s differ from those of %s, which shares %s; give every workflow on a host:port the same readTimeout, idleTimeout, writeTimeout, maxConnections and maxConnectionsPerIp, or leave them out",
				limitsDiff(e.limits.Resolved(), l.limits), l.limitsFrom, addr)
		}
		if e.hostsSet && !e.hosts.equal(l.hosts) {
			return nil, fmt.Errorf("listener option allowedHosts=%q differs from %q of %s, which shares %s; give every workflow on a host:port the same allowedHosts, or leave it out",
				e.hosts.String(), l.hosts.String(), l.limitsFrom, addr)
		}
		if e.proxiesSet && !sameProxies(e.proxies, l.proxies) {
			return nil, fmt.Errorf("listener options trustedProxies/proxyProtocol differ from those of %s, which shares %s; give every workflow on a host:port the same values, or leave them out",
				l.limitsFrom, addr)
		}
		l.refs++
		return l, nil
	}
	// netguard.Listen: a reload hands the socket over to the next application.
	raw, err := netguard.Listen(ctx, addr, "http-server "+addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	ln := netguard.NewListener(raw, e.limits, "http-server "+addr, c.logger())
	ln.TrustProxies(e.proxies)
	l := &listener{c: c, key: addr, ln: ln, refs: 1, routes: map[string][]*route{}, served: make(chan struct{}),
		limits: e.limits.Resolved(), limitsFrom: e.raw, hosts: e.hosts, proxies: e.proxies}
	l.srv = &nethttp.Server{
		Handler:  l,
		ErrorLog: slog.NewLogLogger(c.logger().Handler(), slog.LevelWarn),
	}
	netguard.Configure(l.srv, e.limits)
	go func() {
		defer close(l.served)
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			c.logger().Error("http-server: listener failed", "addr", addr, "error", err)
		}
	}()
	c.listeners[addr] = l
	c.logger().Info("http-server listening", "addr", addr, "bound", ln.Addr().String())
	return l, nil
}

// release drops one reference and shuts the listener down with the last one.
func (c *Component) release(ctx context.Context, l *listener) error {
	c.mu.Lock()
	l.refs--
	last := l.refs == 0
	if last && c.listeners[l.key] == l {
		delete(c.listeners, l.key)
	}
	c.mu.Unlock()
	if !last {
		return nil
	}
	return l.shutdown(ctx)
}

// listener is one bound address and the routes served on it.
type listener struct {
	c      *Component
	key    string
	ln     net.Listener
	srv    *nethttp.Server
	refs   int           // guarded by c.mu
	served chan struct{} // closed when Serve returned
	// limits are the listener's options (defaults applied), set by the URI
	// limitsFrom that opened it.
	limits     netguard.Limits
	limitsFrom string
	hosts      hostPolicy // allowedHosts (host.go)
	proxies    netguard.ProxyOptions

	mu     sync.RWMutex
	routes map[string][]*route // by exact path
	once   sync.Once
	err    error
}

// shutdown stops accepting and waits for open requests within ctx (or
// DefaultStopTimeout), then closes what is left. Safe to call more than once.
func (l *listener) shutdown(ctx context.Context) error {
	l.once.Do(func() {
		ctx, cancel := withDefaultTimeout(ctx)
		defer cancel()
		if err := l.srv.Shutdown(ctx); err != nil {
			l.err = fmt.Errorf("http-server %s: shutdown: %w", l.key, errors.Join(err, l.srv.Close()))
		}
		<-l.served
	})
	return l.err
}

func (l *listener) add(r *route) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, other := range l.routes[r.path] {
		if other.method == "" || r.method == "" || other.method == r.method {
			return fmt.Errorf("path %s on %s is already served by %s", r.path, l.key, other.raw)
		}
	}
	l.routes[r.path] = append(l.routes[r.path], r)
	return nil
}

func (l *listener) remove(r *route) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := l.routes[r.path]
	for i, x := range rs {
		if x == r {
			rs = append(rs[:i:i], rs[i+1:]...)
			break
		}
	}
	if len(rs) == 0 {
		delete(l.routes, r.path)
	} else {
		l.routes[r.path] = rs
	}
}

// match finds the route for a request; allowed lists the methods of the path when
// only the method is wrong.
func (l *listener) match(path, method string) (r *route, allowed []string) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, x := range l.routes[path] {
		if x.method == "" || x.method == method || method == nethttp.MethodHead && x.method == nethttp.MethodGet {
			return x, nil
		}
		allowed = append(allowed, x.method)
	}
	return nil, allowed
}

// route is one consumer's path on a listener.
type route struct {
	raw     string
	path    string
	method  string
	maxBody int64
	p       component.Processor
	logger  func() *slog.Logger
	// consumes lists the media types the route reads (nil: any).
	consumes []string

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	// abort is cancelled when Stop stops waiting for in-flight requests.
	abort       context.Context
	cancelAbort context.CancelFunc
}

// enter registers a request unless the route is closing.
func (r *route) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.inflight.Add(1)
	return true
}

func (l *listener) ServeHTTP(w nethttp.ResponseWriter, req *nethttp.Request) {
	if l.hosts.refuses(req) {
		writeError(w, nethttp.StatusForbidden, fmt.Sprintf(
			"Host %.100q is not served on this listener (DNS rebinding?); list it in the allowedHosts option of the http-server URI", req.Host))
		return
	}
	r, allowed := l.match(req.URL.Path, req.Method)
	if r == nil {
		if len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			writeError(w, nethttp.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s", req.Method, req.URL.Path))
			return
		}
		writeError(w, nethttp.StatusNotFound, "no workflow serves "+req.URL.Path)
		return
	}
	if !r.enter() {
		writeError(w, nethttp.StatusServiceUnavailable, "the workflow serving "+req.URL.Path+" is stopping")
		return
	}
	defer r.inflight.Done()
	r.serve(w, req)
}

func (r *route) serve(w nethttp.ResponseWriter, req *nethttp.Request) {
	data, err := io.ReadAll(nethttp.MaxBytesReader(w, req.Body, r.maxBody))
	if err != nil {
		var tooBig *nethttp.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", r.maxBody))
			return
		}
		writeError(w, nethttp.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	ex := exchange.New(exchange.InOut)
	inbound := map[string]string{}
	for k, vs := range req.Header {
		if len(vs) == 0 || helixhttp.IsHelixHeader(k) {
			continue
		}
		ex.In().SetHeader(k, vs[0])
		inbound[k] = vs[0]
	}
	ex.In().SetHeader(HeaderHTTPMethod, req.Method)
	ex.In().SetHeader(HeaderHTTPPath, req.URL.Path)
	ex.In().SetHeader(HeaderHTTPQuery, req.URL.RawQuery)
	body, status, msg := r.read(data, req.Header.Get("Content-Type"))
	if status != 0 {
		// The client's mistake, said plainly; the workflow does not run.
		writeError(w, status, msg)
		return
	}
	ex.In().SetBody(body)

	// The exchange ends when the client goes away or when Stop gives up waiting.
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	defer context.AfterFunc(r.abort, cancel)()

	if err := r.process(ctx, ex); err != nil {
		r.logger().Debug("http-server: workflow failed", "uri", r.raw, "exchange", ex.ID(), "error", err)
		writeFailure(w, failureStatus(ex, err), exchange.ClientMessage(err), exchange.ErrorDetails(err))
		return
	}
	respond(w, req, ex, inbound)
}

// process runs the pipeline; a panic that escaped it becomes an error, so that one bad
// request never takes the connection down with a half-written response.
func (r *route) process(ctx context.Context, ex *exchange.Exchange) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("workflow panicked: %v", v)
		}
	}()
	if err := r.p.Process(ctx, ex); err != nil {
		return err
	}
	return ex.Exception()
}

// read turns a request body into the exchange body, or returns a 4xx status and a
// plain message for a request the workflow cannot read: a body labelled JSON that
// does not parse (400), and with the consumes option a Content-Type it does not
// list (415) or an empty body (400).
func (r *route) read(data []byte, contentType string) (body any, status int, msg string) {
	if len(r.consumes) > 0 {
		mt, _, _ := mime.ParseMediaType(contentType)
		if !r.accepts(mt) {
			got := "no Content-Type"
			if contentType != "" {
				got = "Content-Type " + contentType
			}
			return nil, nethttp.StatusUnsupportedMediaType, fmt.Sprintf("this endpoint reads %s; the request has %s (send Content-Type: %s)",
				strings.Join(r.consumes, " or "), got, r.consumes[0])
		}
		if len(data) == 0 {
			return nil, nethttp.StatusBadRequest, "the request body is empty; this endpoint reads " + strings.Join(r.consumes, " or ")
		}
	}
	if len(data) == 0 {
		return nil, 0, ""
	}
	if helixhttp.IsJSON(contentType) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, nethttp.StatusBadRequest, "the request body is not valid JSON: " + err.Error()
		}
		return v, 0, ""
	}
	return string(data), 0, ""
}

// accepts reports whether media type mt (lower-case, without parameters) is one the
// route consumes; any JSON type (application/vnd.api+json) counts as application/json.
func (r *route) accepts(mt string) bool {
	for _, c := range r.consumes {
		if c == mt || c == "application/json" && helixhttp.IsJSON(mt) {
			return true
		}
		if base, ok := strings.CutSuffix(c, "/*"); ok && strings.HasPrefix(mt, base+"/") {
			return true
		}
	}
	return false
}

// failureStatus is the status of a failed pipeline: the error status
// HelixHttpResponseCode holds (the workflow said so before failing), else the
// status the error describes (exchange.HTTPStatus: the workflow's on_error
// override, a component's classification such as 409 or 422, 504 for a timeout),
// else 500.
func failureStatus(ex *exchange.Exchange, err error) int {
	if v := ex.In().Header(exchange.HeaderHTTPResponseCode); v != nil {
		if code, err := statusCode(v); err == nil && code >= 400 {
			return code
		}
	}
	return exchange.HTTPStatus(err)
}

func respond(w nethttp.ResponseWriter, req *nethttp.Request, ex *exchange.Exchange, inbound map[string]string) {
	status := nethttp.StatusOK
	if v := ex.In().Header(exchange.HeaderHTTPResponseCode); v != nil {
		code, err := statusCode(v)
		if err != nil {
			writeError(w, nethttp.StatusInternalServerError, err.Error())
			return
		}
		status = code
	}
	var setCT string // a Content-Type the workflow set or changed
	for k, v := range ex.In().Headers() {
		if !helixhttp.OutboundHeader(k) {
			continue
		}
		s, ok := helixhttp.HeaderValue(v)
		if !ok {
			continue
		}
		if old, was := inbound[k]; was && old == s {
			continue // still the request's header, not part of the answer
		}
		if nethttp.CanonicalHeaderKey(k) == "Content-Type" {
			setCT = s
			continue
		}
		w.Header().Set(k, s)
	}
	inheritedCT := inbound[nethttp.CanonicalHeaderKey("Content-Type")]
	var payload []byte
	ct := setCT
	switch b := ex.In().Body().(type) {
	case nil:
	case string:
		payload = []byte(b)
		if ct == "" {
			ct = "text/plain; charset=utf-8"
			if helixhttp.IsJSON(inheritedCT) && json.Valid(payload) {
				ct = inheritedCT
			}
		}
	case []byte:
		payload = b // Content-Type sniffed by net/http unless set
	case json.RawMessage:
		payload = b
		if ct == "" {
			ct = "application/json"
		}
	default:
		out, err := json.Marshal(b)
		if err != nil {
			writeError(w, nethttp.StatusInternalServerError, "encode response body as JSON: "+err.Error())
			return
		}
		payload = out
		if ct == "" {
			ct = "application/json"
		}
	}
	if ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(status)
	if req.Method != nethttp.MethodHead && len(payload) > 0 {
		_, _ = w.Write(payload)
	}
}

// statusCode reads HelixHttpResponseCode: an int, a whole float (JSON numbers) or a
// numeric string, between 100 and 999.
func statusCode(v any) (int, error) {
	var code int
	switch t := v.(type) {
	case int:
		code = t
	case int64:
		code = int(t)
	case float64:
		if t != float64(int(t)) {
			return 0, fmt.Errorf("header %s=%v is not a whole number", exchange.HeaderHTTPResponseCode, v)
		}
		code = int(t)
	default:
		n, err := strconv.Atoi(strings.TrimSpace(exchange.Stringify(v)))
		if err != nil {
			return 0, fmt.Errorf("header %s=%q is not a status code", exchange.HeaderHTTPResponseCode, exchange.Stringify(v))
		}
		code = n
	}
	if code < 100 || code > 999 {
		return 0, fmt.Errorf("header %s=%d is not a status code (100-999)", exchange.HeaderHTTPResponseCode, code)
	}
	return code, nil
}

func writeError(w nethttp.ResponseWriter, status int, msg string) {
	writeFailure(w, status, msg, nil)
}

// writeFailure answers {"error": msg}, with "errors": details when the error
// carried some (the fields an input schema rejected).
func writeFailure(w nethttp.ResponseWriter, status int, msg string, details any) {
	// The caller may not see a secret an error text carries (internal/redact).
	reply := map[string]any{"error": redact.Text(msg)}
	if details != nil {
		reply["errors"] = details
	}
	body, err := json.Marshal(reply)
	if err != nil { // details that do not encode: the message alone still helps
		body, _ = json.Marshal(map[string]string{"error": redact.Text(msg)})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// consumer is one workflow's route on a shared listener.
type consumer struct {
	e *endpoint
	p component.Processor

	mu sync.Mutex
	l  *listener
	r  *route
}

// Start binds the address (or joins its listener) and adds the route.
func (c *consumer) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.l != nil {
		return fmt.Errorf("%s: consumer already started", c.e.raw)
	}
	l, err := c.e.c.acquire(ctx, c.e)
	if err != nil {
		return fmt.Errorf("%s: %w", c.e.raw, err)
	}
	abort, cancel := context.WithCancel(context.Background())
	r := &route{raw: c.e.raw, path: c.e.path, method: c.e.method, maxBody: c.e.maxBody, p: c.p,
		logger: c.e.c.logger, abort: abort, cancelAbort: cancel, consumes: c.e.consumes}
	if err := l.add(r); err != nil {
		cancel()
		return errors.Join(fmt.Errorf("%s: %w", c.e.raw, err), c.e.c.release(context.Background(), l))
	}
	c.l, c.r = l, r
	return nil
}

// Stop removes the route (new requests get 404), waits for its in-flight requests
// within ctx (or DefaultStopTimeout), cancels those still running after that, and
// releases the listener, which shuts down gracefully with its last route.
func (c *consumer) Stop(ctx context.Context) error {
	c.mu.Lock()
	l, r := c.l, c.r
	c.l, c.r = nil, nil
	c.mu.Unlock()
	if l == nil {
		return nil
	}
	l.remove(r)
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	defer r.cancelAbort()

	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	drained := make(chan struct{})
	go func() { r.inflight.Wait(); close(drained) }()
	var errs []error
	select {
	case <-drained:
	case <-ctx.Done():
		r.cancelAbort()
		select {
		case <-drained:
		case <-time.After(time.Second):
			// The waiter goroutine ends when the stuck requests do; the listener
			// shutdown below closes their connections.
			errs = append(errs, fmt.Errorf("stop %s: in-flight requests ignored cancellation", c.e.raw))
		}
	}
	// Shutdown gets its own short budget when ctx is already spent, so that the
	// listener is closed either way.
	sctx := ctx
	if ctx.Err() != nil {
		var c2 context.CancelFunc
		sctx, c2 = context.WithTimeout(context.Background(), time.Second)
		defer c2()
	}
	errs = append(errs, c.e.c.release(sctx, l))
	return errors.Join(errs...)
}

// limitsDiff names the listener options in which a and b differ, with a's values.
func limitsDiff(a, b netguard.Limits) string {
	var d []string
	add := func(name string, av, bv any) {
		if av != bv {
			d = append(d, fmt.Sprintf("%s=%v (the listener has %v)", name, av, bv))
		}
	}
	add("readTimeout", a.ReadTimeout, b.ReadTimeout)
	add("idleTimeout", a.IdleTimeout, b.IdleTimeout)
	add("writeTimeout", a.WriteTimeout, b.WriteTimeout)
	add("maxConnections", a.MaxConnections, b.MaxConnections)
	add("maxConnectionsPerIp", a.MaxConnectionsPerIP, b.MaxConnectionsPerIP)
	return strings.Join(d, ", ")
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultStopTimeout)
}

// RouteMethod returns the HTTP method the http-server:// route u accepts, upper
// case, or "" when it accepts any (httpMethod unset, or a URI this component
// would refuse). The management manifest lists routes through it, so the option
// is read only here.
func RouteMethod(u *uri.URI) string {
	o, err := uriBinding.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToUpper(o.HTTPMethod)
}
