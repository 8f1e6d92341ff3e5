package app

import (
	"context"
	"net/http"
	"strings"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/audit"
	"github.com/arvenza/helix/internal/gateway/creds"
	"github.com/arvenza/helix/internal/gateway/h1"
	"github.com/arvenza/helix/internal/gateway/policy"
	"github.com/arvenza/helix/internal/gateway/upstream"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/starlang"
)

// buildGateway makes the gateway of a server entry with upstreams: (see
// docs/gateway.md) and hooks it into the server's options: the upstreams'
// tools, prompts and resources are served beside the server's own, its
// audiences: are virtual servers on the same listener. Bad auth: blocks are
// configuration errors at their position.
func (a *App) buildGateway(opts *mcpserver.Options, s config.MCPServerConfig) {
	gc := s.Gateway
	if gc == nil {
		return
	}
	for _, au := range gc.Audiences {
		opts.Audiences = append(opts.Audiences, mcpserver.Audience{Path: au.Path, Names: au.Tools})
	}
	if len(gc.Upstreams) == 0 {
		return
	}
	if opts.Transport == mcpserver.TransportStdio && len(gc.Audiences) > 0 {
		a.cfg.Warnings = append(a.cfg.Warnings, &config.Error{Pos: s.Pos, Path: s.Path + ".audiences",
			Msg: "audiences are paths on an HTTP listener; a stdio server serves none of them"})
	}
	auths := map[string]*mcpclient.AuthConfig{}
	ok := true
	for _, u := range gc.Upstreams {
		if u.Auth == nil {
			continue
		}
		auth, err := mcpclient.ParseAuth(u.Auth.Values)
		if err != nil {
			a.errs = append(a.errs, &config.Error{Pos: u.Auth.Pos, Path: u.Path + ".auth",
				Msg: strings.TrimPrefix(err.Error(), "auth: ")})
			ok = false
			continue
		}
		auths[u.ID] = auth
	}
	for _, u := range gc.Upstreams {
		if errs := creds.Check(u); len(errs) > 0 {
			a.errs = append(a.errs, errs...)
			ok = false
		}
	}
	guard, err := policy.New(s.ID, gc.Policies, policy.Options{RateLimitStore: s.Security.RateLimitStore,
		Starlang: &starlang.Options{MaxMemory: a.cfg.Helix.StarlangMaxMemory}, Logger: a.logger})
	if err != nil {
		a.errs = append(a.errs, config.AsErrors(err, s.Pos, s.Path+".policies")...)
		ok = false
	}
	if !ok {
		return
	}
	var openAuditor func() (gateway.Auditor, error)
	if gc.Audit != nil {
		openAuditor = func() (gateway.Auditor, error) {
			au, err := audit.New(a.hc, s.ID, gc.Audit, audit.Options{DataDir: a.cfg.Helix.DataDir, Logger: a.logger, Metrics: auditMetrics})
			if err != nil {
				return nil, err
			}
			a.auditors.Store(s.ID, au)
			return au, nil
		}
	}
	var g *gateway.Gateway
	g, err = gateway.New(gateway.Options{
		ServerID:    s.ID,
		Upstreams:   gc.Upstreams,
		Guard:       guard,
		OpenAuditor: openAuditor,
		Credentials: func(u config.UpstreamConfig) (gateway.Credentials, error) { return creds.New(u, creds.Options{}) },
		NewPool: func(u config.UpstreamConfig, hc *http.Client) (gateway.Pool, error) {
			// Pools are made when the server starts, once g is set. The pool
			// gets the auth: block too: its oauth2 discover and login forms
			// are authorized by the SDK transport's handler, not by hc.
			return upstream.Factory(a.logger, upstream.WithOnReopen(g.Reopened(u.ID)), upstream.WithAuth(auths[u.ID]))(u, hc)
		},
		Principal: func(rctx context.Context, _ http.Header) *gateway.Principal {
			if rctx == nil {
				return &gateway.Principal{}
			}
			return policy.PrincipalFromContext(rctx)
		},
		HTTPClient: func(u config.UpstreamConfig) (*http.Client, error) {
			h := http.Header{}
			for k, v := range u.Headers {
				h.Set(k, v)
			}
			c, base, err := mcpclient.NewAuthHTTPClient(h, auths[u.ID])
			if err == nil {
				// The fast relay's calls to an http upstream go through Helix's
				// own HTTP/1.1 loop, under the same headers, auth and tracking.
				h1.Register(base)
			}
			return c, err
		},
		Scrub: func(u config.UpstreamConfig, sent http.Header, err error) error {
			return creds.Scrub(err, append(creds.Secrets(u), creds.HeaderSecrets(sent)...)...)
		},
		Policies: len(gc.Policies),
		Logger:   a.logger,
	})
	if err != nil {
		a.errs = append(a.errs, &config.Error{Pos: s.Pos, Path: s.Path + ".upstreams", Msg: err.Error()})
		return
	}
	opts.Extension = g
	if a.gateways == nil {
		a.gateways = map[string]*gateway.Gateway{}
	}
	a.gateways[s.ID] = g
}

// manifestGateway describes the gateway of server id for the manifest; nil
// when it has none.
func (a *App) manifestGateway(id string) *management.Gateway {
	g := a.gateways[id]
	if g == nil {
		return nil
	}
	st := g.Status()
	mg := &management.Gateway{Policies: st.Policies}
	for _, u := range st.Upstreams {
		mg.Upstreams = append(mg.Upstreams, management.GatewayUpstream{ID: u.ID, Transport: u.Transport,
			Endpoint: u.Endpoint, Reached: u.Reached, Error: u.Error, Tools: u.Tools, Prompts: u.Prompts,
			Resources: u.Resources + u.Templates})
	}
	for _, s := range a.cfg.MCPServers() {
		if s.ID == id && s.Gateway != nil {
			for _, au := range s.Gateway.Audiences {
				mg.Audiences = append(mg.Audiences, au.Path)
			}
		}
	}
	return mg
}
