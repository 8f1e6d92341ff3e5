// Package management serves Helix's management endpoints: the discovery
// manifest (GET /.well-known/helix-manifest.json), liveness (/healthz),
// readiness (/readyz) and metrics (/metrics, through Prometheus' client_golang).
//
// The management server is a convenience, not a dependency: when its port is
// taken (a second Helix on the same host) Start listens on a free port of the
// same host and logs its URL; when no address can be bound it logs a warning
// and returns nil. Options.Required turns both into a Start error.
package management

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultAddr is loopback only: the manifest lists internal tools and
// addresses, which are nobody else's business unless configured otherwise.
const DefaultAddr = "127.0.0.1:9999"

// ManifestPath is the discovery document's path.
const ManifestPath = "/.well-known/helix-manifest.json"

// Options configure a management server; nil funcs mean "empty manifest" and
// "always ready".
type Options struct {
	Addr     string // default DefaultAddr
	Required bool   // fail Start when the address cannot be bound
	// Manifest is called on every manifest request, so it reflects the
	// current state; it must be safe for concurrent use.
	Manifest func() Manifest
	// Ready returns nil when Helix serves traffic, else the reason it does
	// not (e.g. "starting", "draining"). Safe for concurrent use.
	Ready func() error
	// Metrics is called on every /metrics request for Helix's own families
	// (NewCollector); nil serves helix_build_info and helix_exchanges_inflight
	// beside the Go and process metrics. Safe for concurrent use.
	Metrics func() Metrics
	Logger  *slog.Logger
	// Runs returns the application's durable store, nil when no workflow is
	// durable; it serves GET /runs and GET /runs/{id} (runs.go). Safe for
	// concurrent use.
	Runs func() durable.Runs
	// Limits are the listener's connection limits and timeouts (helix.management:
	// read_timeout, idle_timeout, write_timeout, max_connections,
	// max_connections_per_ip); zero fields mean the netguard defaults.
	Limits netguard.Limits
	// Routes are more routes (ServeMux pattern → handler) that authenticate
	// their requests themselves (the signed callback links of waiting steps):
	// they are served without the loopback host check, so that a reverse proxy
	// may forward them under the public host name.
	Routes map[string]http.Handler
	// Console is the web console (internal/console), served under /console
	// behind the same loopback host check as the other endpoints; nil serves
	// none. It authenticates its own requests.
	Console http.Handler
}

// ConsolePath is where Options.Console is served.
const ConsolePath = "/console"

// Server is the management HTTP server. Start and Stop are called once each
// by the application's lifecycle; Addr is safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	reg  *prometheus.Registry // this server's own: Go, process, Helix and Register'ed collectors

	mu   sync.Mutex
	srv  *http.Server
	addr string
	done chan struct{}
}

// New returns an unstarted server; it has no side effects.
func New(o Options) *Server {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := NewRegistry()
	reg.MustRegister(NewCollector(o.Metrics))
	return &Server{opts: o, log: log, reg: reg}
}

// Start binds the address and serves in a goroutine owned by the server
// until Stop. When the port is taken and the server is not required, it binds
// a free port of the same host instead; when binding fails otherwise, it logs
// a warning and returns nil: Helix runs on without management endpoints.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("management server: already started")
	}
	ln, err := s.listen(ctx)
	if err != nil {
		if s.opts.Required {
			return fmt.Errorf("management server: listen on %s: %w (choose a free address or make management optional)", s.opts.Addr, err)
		}
		s.log.Warn("management server not started; continuing without manifest and health endpoints",
			"addr", s.opts.Addr, "error", err)
		return nil
	}
	s.addr = ln.Addr().String()
	s.srv = &http.Server{
		Handler:  s.handler(isLoopbackListener(ln.Addr())),
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	netguard.Configure(s.srv, s.opts.Limits)
	s.done = make(chan struct{})
	guarded := netguard.NewManagementListener(ln, s.opts.Limits, "management", s.log)
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(guarded); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("management server stopped", "addr", ln.Addr().String(), "error", err)
		}
	}(s.srv, s.done)
	if s.addr != s.opts.Addr && !isRandomPort(s.opts.Addr) {
		s.log.Info("management server listening on a free port: its address was taken (another Helix?)",
			"url", "http://"+s.addr, "taken", s.opts.Addr)
	} else {
		s.log.Info("management server listening", "addr", s.addr, "url", "http://"+s.addr)
	}
	return nil
}

// listen binds the configured address; when that port is taken and the server
// is optional, a free port of the same host instead, so that two Helix
// processes (or two examples) on one machine both have management endpoints.
// netguard.Listen: a reload hands the socket over to the next application.
func (s *Server) listen(ctx context.Context) (net.Listener, error) {
	ln, err := netguard.Listen(ctx, s.opts.Addr, "management")
	if err == nil || s.opts.Required || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	host, _, splitErr := net.SplitHostPort(s.opts.Addr)
	if splitErr != nil {
		return nil, err
	}
	ln, freeErr := netguard.Listen(ctx, net.JoinHostPort(host, "0"), "management")
	if freeErr != nil {
		return nil, err // the taken address is the problem to report
	}
	return ln, nil
}

// isRandomPort reports whether addr asks for any free port (":0").
func isRandomPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port == "0"
}

// Stop shuts the server down gracefully within ctx, then forcibly. It is a
// no-op when the server is not running.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.srv, s.addr = nil, ""
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	<-done
	if err != nil {
		return fmt.Errorf("management server: shutdown: %w", err)
	}
	return nil
}

// Addr is the bound address ("127.0.0.1:9999"), or "" when not running
// (never started, stopped, or the address was taken).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Handler returns the routes without a listener, for embedding in another
// server or for tests. Host checking is off.
func (s *Server) Handler() http.Handler { return s.handler(false) }

func (s *Server) handler(checkHost bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ManifestPath, s.serveManifest)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.serveReady)
	mux.Handle("GET "+MetricsPath, s.metricsHandler())
	runs := runsHandler{runs: s.opts.Runs}
	mux.HandleFunc("GET "+RunsPath, runs.list)
	mux.HandleFunc("GET "+RunsPath+"/{id}", runs.show)
	if s.opts.Console != nil {
		mux.Handle(ConsolePath+"/", s.opts.Console)
		mux.Handle("GET "+ConsolePath, http.RedirectHandler(ConsolePath+"/", http.StatusMovedPermanently))
	}
	if !checkHost {
		for p, h := range s.opts.Routes {
			mux.Handle(p, h)
		}
		return mux
	}
	// DNS-rebinding guard: on a loopback listener only loopback host names are
	// answered, so a web page whose domain was rebound to 127.0.0.1 cannot
	// read the manifest.
	guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("forbidden: host %q is not a loopback name", r.Host), http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
	if len(s.opts.Routes) == 0 {
		return guarded
	}
	outer := http.NewServeMux()
	for p, h := range s.opts.Routes {
		outer.Handle(p, h)
	}
	outer.Handle("/", guarded)
	return outer
}

func (s *Server) serveManifest(w http.ResponseWriter, r *http.Request) {
	var m Manifest
	if s.opts.Manifest != nil {
		m = s.opts.Manifest()
	}
	m = m.normalized()
	m.reachableEndpoints(r.Host)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		http.Error(w, "encoding manifest: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(b, '\n'))
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
	}
	_, _ = w.Write([]byte("ready\n"))
}

func isLoopbackListener(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
