package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/engine"
)

// The web console (internal/console) is assembled from parts: each page's
// console_<page>.go file registers one with registerConsolePart in an init
// function, so that a page is one file here and one package there, and no
// part needs a field of App.

// consolePart is one page of the console, with what it needs from the engine.
type consolePart struct {
	// Name names the part in errors ("exchanges").
	Name string
	// Setup is called once by Build when the console is on. It may return a
	// tracer (added to the engine's tracers beside OpenTelemetry's; nil for
	// none), the page (nil when the part has nothing to show in this app) and
	// a stop function called by Stop (nil for none).
	Setup func(a *App) (consoleSetup, error)
}

// consoleSetup is what a part's Setup returns.
type consoleSetup struct {
	Tracer engine.Tracer
	Page   *console.Page
	// Start is called by Start (nil for none): a part's goroutines start
	// there, not in Setup, since Validate builds an app it never starts.
	Start func()
	Stop  func()
}

var consoleParts []consolePart

// registerConsolePart adds p to the console; init functions only.
func registerConsolePart(p consolePart) { consoleParts = append(consoleParts, p) }

// consoleState is the running console: what Stop releases and what
// ConsoleURL prints. nil when the console is off.
type consoleState struct {
	auth    *console.Auth
	starts  []func()
	stops   []func()
	started bool
	// mux is the console's mux (its routes, for the cross-page tests).
	mux   *console.Mux
	pages []console.Page
	// verifier validates OAuth tokens (nil without helix.console.auth.oauth).
	verifier *security.TokenVerifier
}

// buildConsole decides whether the console is on for the management address
// addr and, if so, sets up every part and returns the handler the management
// server serves under /console; nil when off. Off costs nothing: no part is
// set up, no tracer is added.
func (a *App) buildConsole(addr string) http.Handler {
	c := a.cfg.Helix.Console
	loopback := loopbackAddr(addr)
	on := loopback
	if c.Enabled != nil {
		on = *c.Enabled
	}
	if !on {
		return nil
	}
	if !loopback && !c.HasAuth() {
		a.errs = append(a.errs, &config.Error{Pos: c.Pos, Path: "helix.console",
			Msg:  fmt.Sprintf("the console is enabled on the management address %s, which is not loopback, without helix.console.auth: anyone who reaches the address would see every workflow and exchange", addr),
			Hint: "add helix.console.auth.api_keys (a key per user; roles: [operator] to act) or auth.oauth, or set helix.console.enabled: false"})
		return nil
	}
	keys := make([]console.APIKey, len(c.Auth.APIKeys))
	for i, k := range c.Auth.APIKeys {
		keys[i] = console.APIKey{Key: k}
		if i < len(c.Auth.APIKeyPrincipals) {
			keys[i].Name, keys[i].Roles = c.Auth.APIKeyPrincipals[i].Name, c.Auth.APIKeyPrincipals[i].Roles
		}
		if k == "" {
			a.errs = append(a.errs, &config.Error{Pos: c.Auth.Pos, Path: fmt.Sprintf("helix.console.auth.api_keys[%d]", i),
				Msg: "the API key is empty", Hint: "is its ${env:…} variable set? An empty key would let anyone in"})
		}
		redact.AddSecret(k) // a key never shows in a page, log line or error
	}
	st := &consoleState{}
	opts := console.AuthOptions{Base: management.ConsolePath, Keys: keys, Link: loopback,
		Limiter: security.NewFailureLimiter(0, 0, 0)}
	if o := c.Auth.OAuth; o != nil {
		v, err := security.NewTokenVerifier(security.OAuthConfig{Issuer: o.Issuer, Audience: o.Audience, JWKSURL: o.JWKSURL, RolesClaim: o.RolesClaim})
		if err != nil {
			a.errs = append(a.errs, &config.Error{Pos: o.Pos, Path: "helix.console.auth.oauth", Msg: err.Error()})
			return nil
		}
		st.verifier = v
		opts.Verify = func(ctx context.Context, raw string) (string, []string, error) {
			cl, err := v.Verify(ctx, raw)
			if err != nil {
				return "", nil, err
			}
			return cl.Subject, cl.Roles, nil
		}
	}
	st.auth = console.NewAuth(opts)
	tracers := []engine.Tracer{a.hc.Tracer()}
	var pages []console.Page
	for _, p := range consoleParts {
		s, err := p.Setup(a)
		if err != nil {
			a.errs = append(a.errs, &config.Error{Pos: c.Pos, Path: "helix.console", Msg: fmt.Sprintf("console page %s: %v", p.Name, err)})
			continue
		}
		if s.Tracer != nil {
			tracers = append(tracers, s.Tracer)
		}
		if s.Page != nil {
			pages = append(pages, *s.Page)
		}
		if s.Start != nil {
			st.starts = append(st.starts, s.Start)
		}
		if s.Stop != nil {
			st.stops = append(st.stops, s.Stop)
		}
	}
	a.hc.SetTracer(console.Tee(tracers...))
	a.console = st
	mux := console.NewMux(console.Options{Base: management.ConsolePath, Auth: st.auth, Pages: pages,
		AppName: a.hc.Name(), Logger: a.logger})
	st.mux, st.pages = mux, pages
	return st.auth.Wrap(mux.Handler())
}

// stopConsole stops the parts (after the drain: their tracers saw the last
// exchanges).
func (a *App) stopConsole() {
	if a.console == nil || !a.console.started {
		return
	}
	a.console.started = false
	for _, stop := range a.console.stops {
		stop()
	}
	if a.console.verifier != nil {
		a.console.verifier.Close()
	}
}

// startConsole starts the parts and logs where the console is (without the
// link's token: the log is no place for it; helix run prints the link).
func (a *App) startConsole() {
	if a.console == nil || a.console.started {
		return
	}
	a.console.started = true
	for _, start := range a.console.starts {
		start()
	}
	if a.mgmt != nil && a.mgmt.Addr() != "" {
		a.logger.Info("console listening", "url", "http://"+a.mgmt.Addr()+management.ConsolePath+"/")
	}
}

// ConsoleURL is the web console's address while the management server runs:
// on a loopback listener the one-time sign-in link (with its token: print it
// to the user, never to a log), elsewhere the plain URL; "" when the console
// is off or the management server is not running.
func (a *App) ConsoleURL() string {
	if a.console == nil || a.mgmt == nil {
		return ""
	}
	addr := a.mgmt.Addr()
	if addr == "" {
		return ""
	}
	u := "http://" + addr + management.ConsolePath + "/"
	if tok := a.console.auth.LinkToken(); tok != "" {
		u += "?token=" + tok
	}
	return u
}

// loopbackAddr reports whether a management address (host:port) listens on
// loopback only; an empty host (all interfaces) is not.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// consoleWithoutManagement reports helix.console.enabled: true when there is
// no management server to serve it.
func (a *App) consoleWithoutManagement() {
	if c := a.cfg.Helix.Console; a.mgmt == nil && c.Enabled != nil && *c.Enabled {
		a.errs = append(a.errs, &config.Error{Pos: c.Pos, Path: "helix.console.enabled",
			Msg:  "the console is served by the management server, which is off here",
			Hint: "set helix.management.enabled: true (a stdio MCP server needs helix.management.addr too), or remove helix.console.enabled"})
	}
}
