package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/security"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/netguard"
	"github.com/arvenza/helix/internal/registry"
	"github.com/arvenza/helix/pkg/uri"
)

// serverSecurity is the security of one declared MCP server. Two stacks exist:
//
//   - filter is built with the application (Build), so that a bad setting is a
//     configuration error with a position. It answers the tool hook (allowed/blocked
//     tools, OAuth scopes), which keeps no state, and is built without a rate limit so
//     that it owns no goroutine: a validated-and-discarded build leaks nothing.
//   - live serves HTTP (keys, rate-limit buckets, the JWKS cache). It exists from
//     App.Start to App.Stop, because the rate limiter's janitor goroutine needs an
//     owner that stops it.
type serverSecurity struct {
	id     string
	cfg    security.Config
	filter *security.Stack

	mu   sync.Mutex
	live *security.Stack
}

// hasSecurity reports whether any security key is set.
func hasSecurity(s config.Security) bool {
	return len(s.APIKeys) > 0 || len(s.TrustedProxies) > 0 || s.ProxyProtocol || s.RateLimit != 0 || s.RateLimitStore != "" || s.MaxBodyBytes != 0 ||
		s.AuthFailureLimit != 0 || s.AuthFailureWindow != 0 ||
		len(s.CORSOrigins) > 0 || len(s.AllowedTools) > 0 || len(s.BlockedTools) > 0 || s.Auth != nil
}

// httpOnlySettings names the keys that only act on the HTTP layer.
func httpOnlySettings(s config.Security) []string {
	var keys []string
	add := func(set bool, key string) {
		if set {
			keys = append(keys, key)
		}
	}
	add(len(s.APIKeys) > 0, "api_keys")
	add(len(s.TrustedProxies) > 0, "trusted_proxies")
	add(s.ProxyProtocol, "proxy_protocol")
	add(s.RateLimit != 0, "rate_limit")
	add(s.RateLimitStore != "", "rate_limit_store")
	add(s.RateLimitStoreFallback != "", "rate_limit_store_fallback")
	add(s.AuthFailureLimit != 0, "auth_failure_limit")
	add(s.AuthFailureWindow != 0, "auth_failure_window")
	add(s.MaxBodyBytes != 0, "max_body_bytes")
	add(len(s.CORSOrigins) > 0, "cors_origins")
	add(s.Auth != nil, "auth")
	return keys
}

// securityConfig converts the YAML settings. ${env:…} references were resolved when
// the file was loaded; an empty key (a variable set to "") is refused by security.New.
func securityConfig(id string, s config.Security, logger *slog.Logger) security.Config {
	c := security.Config{
		APIKeys:        s.APIKeys,
		TrustedProxies: s.TrustedProxies,
		RateLimit:      s.RateLimit,
		RateLimitStore: s.RateLimitStore,
		MaxBodyBytes:   s.MaxBodyBytes,
		CORSOrigins:    s.CORSOrigins,
		AllowedTools:   s.AllowedTools,
		BlockedTools:   s.BlockedTools,
		ServerID:       id,
		Logger:         logger,
	}
	for _, who := range s.APIKeyPrincipals {
		c.APIKeyPrincipals = append(c.APIKeyPrincipals, security.KeyPrincipal{Name: who.Name, Roles: who.Roles})
	}
	c.AuthFailureLimit, c.AuthFailureWindow = s.AuthFailureLimit, s.AuthFailureWindow
	c.RateLimitStoreFallback = s.RateLimitStoreFallback
	if a := s.Auth; a != nil {
		c.Auth = &security.OAuthConfig{Issuer: a.Issuer, Audience: a.Audience, JWKSURL: a.JWKSURL,
			Scopes: a.Scopes, ResourceURL: a.ResourceURL, RolesClaim: a.RolesClaim}
	}
	return c
}

// applySecurity wires the security settings of a declared server into opts. On a
// stdio server only the tool lists apply (there is no HTTP layer); the other keys
// draw a warning. Errors are configuration errors at pos.
func (a *App) applySecurity(opts *mcpserver.Options, s config.Security, pos config.Pos, path string) {
	if !hasSecurity(s) {
		// No stack: the Origin rule of the MCP specification still applies
		// (a foreign or "null" Origin gets 403; see security.OriginGuard).
		opts.HTTPMiddleware = security.OriginGuard
		return
	}
	stdio := strings.EqualFold(strings.TrimSpace(opts.Transport), mcpserver.TransportStdio)
	if stdio {
		if keys := httpOnlySettings(s); len(keys) > 0 {
			a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: pos, Path: path,
				Msg:  fmt.Sprintf("%s: not applied to a stdio server, which has no HTTP layer", strings.Join(keys, ", ")),
				Hint: "only allowed_tools and blocked_tools act on stdio; the process that launches helix controls who talks to it"})
		}
		s = config.Security{AllowedTools: s.AllowedTools, BlockedTools: s.BlockedTools}
		if !hasSecurity(s) {
			return
		}
	}
	if s.RateLimitStore != "" && s.RateLimit == 0 && !a.gatewayLimits(path) {
		a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: s.RateLimitStorePos, Path: path + ".rate_limit_store",
			Msg:  "rate_limit_store has no effect: rate_limit is 0 (off)",
			Hint: "set rate_limit to the requests per minute per client that the replicas share"})
	}
	if s.RateLimitStore != "" {
		// config checked the URL; this build may still have left its kind out.
		var nib *registry.NotInBuildError
		if err := security.CheckRateLimitStore(s.RateLimitStore); errors.As(err, &nib) {
			a.errs = append(a.errs, &config.Error{Pos: s.RateLimitStorePos, Path: path + ".rate_limit_store", Msg: err.Error()})
			return
		}
	}
	cfg := securityConfig(opts.ID, s, a.logger)
	// One counter for every live stack of this server, so /metrics survives restarts.
	cfg.Rejections = &security.Rejections{}
	cfg.RateLimitStoreFailures = &atomic.Uint64{}
	filterCfg := cfg
	filterCfg.RateLimit = 0 // no janitor goroutine: this stack is never closed
	// Nor a store connection; config checked the URL, at its own position.
	filterCfg.RateLimitStore, filterCfg.RateLimitStoreFallback = "", ""
	filter, err := security.New(filterCfg)
	if err == nil && cfg.RateLimit < 0 {
		err = fmt.Errorf("rate_limit must be >= 0, got %d", cfg.RateLimit)
	}
	if err != nil {
		a.errs = append(a.errs, &config.Error{Pos: pos, Path: path, Msg: err.Error()})
		return
	}
	sec := &serverSecurity{id: opts.ID, cfg: cfg, filter: filter}
	opts.ToolAllowed = sec.toolAllowed
	if s.ProxyProtocol && len(s.TrustedProxies) == 0 {
		a.errs = append(a.errs, &config.Error{Pos: pos, Path: path + ".proxy_protocol",
			Msg:  "proxy_protocol needs trusted_proxies: the PROXY header is only believed from them",
			Hint: "list the addresses of the load balancers, e.g. trusted_proxies: [10.0.0.0/8]"})
		return
	}
	if !stdio {
		// trusted_proxies were checked by security.New above.
		trusted, _ := netguard.ParseTrustedProxies("trusted_proxies", s.TrustedProxies)
		opts.Proxies = netguard.ProxyOptions{Trusted: trusted, Protocol: s.ProxyProtocol}
		opts.HTTPMiddleware = sec.middleware
		// rate_limit counts a batch's calls, not its POST.
		opts.ChargeCalls = sec.chargeCalls
		// The stack enforces the body limit; the SDK's own limit must not be lower.
		opts.MaxRequestBodyBytes = filter.MaxBodyBytes()
		// The stack guards against DNS rebinding itself, exempting trusted proxies
		// (a reverse proxy on this host forwards the public Host to loopback).
		opts.DisableLocalhostProtection = true
	}
	a.security = append(a.security, sec)
	if a.securityByID == nil {
		a.securityByID = map[string]*serverSecurity{}
	}
	a.securityByID[opts.ID] = sec
}

func (s *serverSecurity) toolAllowed(ctx context.Context, name string) error {
	return s.filter.ToolAllowed(name, ctx)
}

// listed reports whether the server lists the tool to somebody: blocked tools and
// tools outside allowed_tools are never listed, while a tool that needs OAuth scopes
// is listed to tokens that carry them.
func (s *serverSecurity) listed(name string) bool {
	err := s.filter.ToolAllowed(name, context.Background())
	return err == nil || !(errors.Is(err, security.ErrToolBlocked) || errors.Is(err, security.ErrToolNotAllowed))
}

// middleware is the server's HTTPMiddleware; the server calls it when it starts,
// after App.Start opened the live stack.
func (s *serverSecurity) middleware(next http.Handler) http.Handler {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	if live == nil {
		// Only reachable if the server were started outside App.Start; refusing is
		// the safe answer for a server that is meant to be protected.
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "mcp server security is not initialised", http.StatusServiceUnavailable)
		})
	}
	return live.Middleware(next)
}

// chargeCalls takes n more rate-limit tokens for a request the live stack
// admitted (the calls of a batch beyond the first).
func (s *serverSecurity) chargeCalls(r *http.Request, n int) (bool, time.Duration, error) {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	if live == nil {
		return true, 0, nil
	}
	return live.ChargeCalls(r, n)
}

// open builds the live stack with the logger current at start (helix run replaces
// the build-time logger once helix.log_level is known).
func (s *serverSecurity) open(logger *slog.Logger) error {
	cfg := s.cfg
	cfg.Logger = logger
	st, err := security.New(cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.live
	s.live = st
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// close stops the live stack's janitor; the handler built from it keeps working
// (a server still shutting down can answer its last requests).
func (s *serverSecurity) close() {
	s.mu.Lock()
	live := s.live
	s.live = nil
	s.mu.Unlock()
	if live != nil {
		live.Close()
	}
}

func (a *App) openSecurity() error {
	for i, s := range a.security {
		if err := s.open(a.hc.Logger()); err != nil {
			for _, o := range a.security[:i] {
				o.close()
			}
			return fmt.Errorf("mcp server %s: %w", s.id, err)
		}
	}
	return nil
}

func (a *App) closeSecurity() {
	for _, s := range a.security {
		s.close()
	}
}

// warnOpenListeners warns (helix validate, helix run) about listeners that accept
// connections from beyond loopback without authentication: an MCP server without
// api_keys or auth whose addr is a wildcard (0.0.0.0, ::, an empty host), a
// non-loopback address or a host name, and the management address, whose
// endpoints never ask for credentials.
func (a *App) warnOpenListeners() {
	open := func(transport, addr string) (string, bool) {
		if strings.EqualFold(strings.TrimSpace(transport), mcpserver.TransportStdio) {
			return "", false
		}
		if addr == "" {
			addr = mcpserver.DefaultAddr
		}
		return addr, beyondLoopback(addr)
	}
	warn := func(pos config.Pos, path, what, addr string) {
		a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: pos, Path: path,
			Msg:  fmt.Sprintf("%s listens on %s, beyond loopback, and has neither api_keys nor auth: anyone who reaches the port can list and call its tools", what, addr),
			Hint: `add api_keys: ["${env:MCP_KEY}"] or an auth: block, or bind it to 127.0.0.1`})
	}
	for _, s := range a.cfg.MCPServers() {
		if len(s.APIKeys) > 0 || s.Auth != nil {
			continue
		}
		if addr, ok := open(s.Transport, s.Addr); ok {
			warn(s.Pos, s.Path, fmt.Sprintf("mcp server %q", s.ID), addr)
		}
	}
	for _, w := range a.cfg.Workflows {
		u, err := uri.Parse(w.From)
		if err != nil || u.Scheme != mcpServerScheme {
			continue
		}
		if addr, ok := open(mcpserver.URITransport(u), u.Host); ok {
			a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: w.FromPos, Path: w.Path,
				Msg:  fmt.Sprintf("the mcp-server:// trigger of workflow %q listens on %s, beyond loopback, without authentication: anyone who reaches the port can list and call its tools", w.ID, addr),
				Hint: "declare the server under mcps: with api_keys or auth, or bind it to 127.0.0.1"})
		}
	}
	if a.mgmt != nil {
		m := a.cfg.Helix.Management
		addr := m.Addr
		if a.opts.ManagementAddr != "" {
			addr = a.opts.ManagementAddr
		}
		if addr != "" && beyondLoopback(addr) {
			a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: m.Pos, Path: "helix.management.addr",
				Msg:  fmt.Sprintf("the management endpoints listen on %s, beyond loopback, without authentication: the manifest lists every tool and workflow", addr),
				Hint: "bind helix.management.addr to 127.0.0.1 (the default) or to an interface only your monitoring reaches"})
		}
	}
}

// beyondLoopback reports whether a listener on host:port accepts connections from
// other hosts: a wildcard or empty host, a non-loopback address, or a host name other
// than localhost (it may resolve to anything).
func beyondLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false // reported elsewhere
	}
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return true // "" or a host name
	}
	return !ip.Unmap().IsLoopback()
}

// gatewayLimits reports whether the gateway policies of the server at path
// have a rate: or quota:, which rate_limit_store holds as well.
func (a *App) gatewayLimits(path string) bool {
	for _, m := range a.cfg.MCPServers() {
		if m.Path != path || m.Gateway == nil {
			continue
		}
		for _, p := range m.Gateway.Policies {
			if p.Rate != "" || p.Quota != "" {
				return true
			}
		}
	}
	return false
}
