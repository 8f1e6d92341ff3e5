package app

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/console/mcppage"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/audit"
	"github.com/arvenza/helix/internal/gateway/upstream"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/tool"
)

// The console's MCP page (internal/console/mcppage) reads the app's MCP
// servers, their sessions and counters, and their gateways through mcpSource.

func init() {
	registerConsolePart(consolePart{Name: "mcp", Setup: func(a *App) (consoleSetup, error) {
		return consoleSetup{Page: mcppage.Page(mcpSource{a})}, nil
	}})
}

type mcpSource struct{ a *App }

func (s mcpSource) Sessions(server string, max int) ([]mcppage.Session, int) {
	comp := s.a.mcpServers()
	if comp == nil {
		return nil, 0
	}
	rows, total := comp.Sessions(server, max)
	out := make([]mcppage.Session, len(rows))
	for i, r := range rows {
		out[i] = mcppage.Session{ID: r.ID, Transport: r.Transport, Protocol: r.Protocol, Client: r.Client,
			Opened: r.Opened, InFlight: r.InFlight}
	}
	return out, total
}

func (s mcpSource) Servers() []mcppage.Server {
	a := s.a
	comp := a.mcpServers()
	if comp == nil {
		return nil
	}
	type key struct{ server, tool string }
	calls := map[key]mcpserver.ToolCallStats{}
	for _, c := range comp.ToolCallStats() {
		calls[key{c.Server, c.Tool}] = c
	}
	configs := map[string]config.MCPServerConfig{}
	for _, c := range a.cfg.MCPServers() {
		configs[c.ID] = c
	}
	infos := comp.Servers()
	admission := map[string]mcpserver.AdmissionStats{}
	for _, st := range comp.AdmissionStats() {
		admission[st.Server] = st
	}
	out := make([]mcppage.Server, 0, len(infos))
	for _, in := range infos {
		cfg, declared := configs[in.ID]
		srv := mcppage.Server{ID: in.ID, Name: in.Name, Version: in.Version, Transport: in.Transport,
			Running: in.Running, Stateless: in.Stateless, Resources: len(in.Resources), Prompts: len(in.Prompts),
			Auth: "none"}
		if in.Transport != mcpserver.TransportStdio && in.Addr != "" {
			path := "/mcp"
			if in.Transport == mcpserver.TransportSSE {
				path = "/sse"
			}
			srv.URL = "http://" + in.Addr + path
			srv.CallURL = "http://" + loopbackOf(in.Addr) + path
		}
		if declared {
			srv.Auth = authKind(cfg.Security)
			srv.Where = cfg.Pos.String()
		}
		for _, t := range in.Tools {
			c := calls[key{in.ID, t.Name}]
			srv.Tools = append(srv.Tools, mcppage.Tool{Name: t.Name, Workflow: t.WorkflowID, Kind: string(t.Kind),
				Description: t.Description, Input: t.InputSchema, Output: t.OutputSchema,
				Annotations: s.annotations(t.WorkflowID), Calls: c.Calls, Errors: c.Errors})
		}
		if sec := a.securityByID[in.ID]; sec != nil {
			for _, r := range sec.cfg.Rejections.Snapshot() {
				srv.Rejected = append(srv.Rejected, mcppage.Count{Name: r.Reason, Count: r.Count})
			}
		}
		if st, ok := admission[in.ID]; ok {
			srv.Admission = &mcppage.Admission{Limit: st.MaxRunning, Running: st.Running, Waiting: st.Waiting,
				Admitted: st.Admitted, Queued: st.Queued, Refused: st.Refused}
		}
		if g := a.gateways[in.ID]; g != nil && declared && cfg.Gateway != nil {
			srv.Gateway = gatewayView(g, cfg.Gateway, a.auditTotals(in.ID))
			for _, u := range srv.Gateway.Upstreams {
				for _, t := range u.Tools {
					c := calls[key{in.ID, t.Served}]
					srv.Tools = append(srv.Tools, upstreamTool(u.ID, t, g, c))
				}
			}
			sort.SliceStable(srv.Tools, func(i, j int) bool { return srv.Tools[i].Name < srv.Tools[j].Name })
		}
		for _, t := range srv.Tools {
			srv.Calls += t.Calls
			srv.Errors += t.Errors
		}
		out = append(out, srv)
	}
	return out
}

// annotations are the hints of the catalogue's tool id, as words.
func (s mcpSource) annotations(id string) []string {
	if s.a.catalogue == nil {
		return nil
	}
	t, ok := s.a.catalogue.Tool(id)
	if !ok {
		return nil
	}
	return annotationWords(t.Annotations)
}

// loopbackOf is addr as the console reaches it: a listener on every address
// is reached over loopback.
func loopbackOf(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	} else if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// authKind says how callers authenticate, never with what.
func authKind(sec config.Security) string {
	var kinds []string
	if n := len(sec.APIKeys); n > 0 {
		kinds = append(kinds, fmt.Sprintf("API keys (%d)", n))
	}
	if o := sec.Auth; o != nil {
		k := "OAuth"
		if o.Issuer != "" {
			k += " (issuer " + redact.URL(o.Issuer) + ")"
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, " or ")
}

func annotationWords(an *tool.Annotations) []string {
	if an == nil {
		return nil
	}
	var out []string
	if an.ReadOnlyHint {
		out = append(out, "read-only")
	} else {
		if an.DestructiveHint == nil || *an.DestructiveHint {
			out = append(out, "may be destructive")
		}
		if an.IdempotentHint {
			out = append(out, "idempotent")
		}
	}
	if an.OpenWorldHint == nil || *an.OpenWorldHint {
		out = append(out, "open world")
	} else {
		out = append(out, "closed world")
	}
	return out
}

// upstreamTool is a tool an upstream contributes, as the page lists it.
func upstreamTool(up string, t mcppage.UpstreamTool, g *gateway.Gateway, c mcpserver.ToolCallStats) mcppage.Tool {
	out := mcppage.Tool{Name: t.Served, Kind: "upstream", Upstream: up, Calls: c.Calls, Errors: c.Errors}
	for _, v := range g.Upstreams() {
		if v.ID != up {
			continue
		}
		for _, st := range v.Tools {
			if st.Served != t.Served || st.Tool == nil {
				continue
			}
			out.Description = st.Tool.Description
			if st.Tool.InputSchema != nil {
				out.Input, _ = json.Marshal(st.Tool.InputSchema)
			}
			if st.Tool.OutputSchema != nil {
				out.Output, _ = json.Marshal(st.Tool.OutputSchema)
			}
			if an := st.Tool.Annotations; an != nil {
				out.Annotations = annotationWords(&tool.Annotations{ReadOnlyHint: an.ReadOnlyHint,
					DestructiveHint: an.DestructiveHint, IdempotentHint: an.IdempotentHint, OpenWorldHint: an.OpenWorldHint})
			}
		}
	}
	return out
}

// gatewayView is what the page shows of a gateway: its upstreams' health and
// tools, its audiences, policies and audit as written in YAML.
func gatewayView(g *gateway.Gateway, gc *config.GatewayConfig, tot audit.Totals) *mcppage.Gateway {
	out := &mcppage.Gateway{}
	st := g.Status()
	status := map[string]gateway.UpstreamStatus{}
	for _, u := range st.Upstreams {
		status[u.ID] = u
	}
	where := map[string]string{}
	for _, u := range gc.Upstreams {
		where[u.ID] = u.Pos.String()
	}
	for _, v := range g.Upstreams() {
		us := status[v.ID]
		u := mcppage.Upstream{ID: v.ID, Transport: us.Transport, URL: redact.URL(us.Endpoint), Sessions: v.Sessions,
			Prefix: v.Prefix, Health: "unknown", LastError: redact.Text(us.Error), Protocol: us.Protocol, Open: us.Sessions,
			Where: where[v.ID]}
		if ps, ok := v.Pool.(interface{ Status() upstream.Status }); ok {
			ps := ps.Status()
			if ps.LastError != "" {
				u.LastError = redact.Text(ps.LastError)
			}
			if ps.ProtocolVersion != "" {
				u.Protocol = ps.ProtocolVersion
			}
			u.Open = ps.OpenSessions
			checked := false
			for _, ep := range ps.Endpoints {
				r := mcppage.Replica{URL: ep.URL, Health: health(ep.Healthy, !ep.Checked.IsZero()), LastError: redact.Text(ep.LastError),
					LastCheck: ep.Checked}
				u.Replicas = append(u.Replicas, r)
				if ep.Checked.After(u.LastCheck) {
					u.LastCheck = ep.Checked
				}
				checked = checked || !ep.Checked.IsZero()
			}
			u.Health = health(ps.Healthy, checked || ps.Healthy)
		}
		for _, t := range v.Tools {
			u.Tools = append(u.Tools, mcppage.UpstreamTool{Served: t.Served, Own: t.Own})
		}
		out.Upstreams = append(out.Upstreams, u)
	}
	for _, au := range gc.Audiences {
		out.Audiences = append(out.Audiences, mcppage.Audience{Path: au.Path, Tools: au.Tools, Where: au.Pos.String()})
	}
	for _, p := range gc.Policies {
		out.Policies = append(out.Policies, mcppage.Policy{Where: p.Pos.String(), Tools: p.Tools, Allow: principalText(p.Allow),
			Deny: principalText(p.Deny), Arguments: p.Arguments, Result: p.Result, Rate: p.Rate, Quota: p.Quota,
			MaxResult: p.MaxResultBytes, Timeout: p.Timeout})
	}
	if au := gc.Audit; au != nil {
		args := au.Arguments
		if args == "" {
			args = "digest"
		}
		out.Audit = &mcppage.Audit{Sink: redact.URL(au.Sink), Arguments: args, Written: tot.Written, Retried: tot.Retried,
			Spooled: tot.Spooled, Where: au.Pos.String()}
	}
	return out
}

// auditTotals are the counts of the running auditor of server: its own, not
// the process-wide /metrics series, which also hold what other auditors of
// that server name counted (the app a reload replaced, another app in the
// process).
func (a *App) auditTotals(server string) audit.Totals {
	if v, ok := a.auditors.Load(server); ok {
		return v.(*audit.Auditor).Totals()
	}
	return audit.Totals{}
}

// health is an endpoint's health as a word: unknown until it was checked.
func health(healthy, known bool) string {
	switch {
	case healthy:
		return "healthy"
	case known:
		return "unhealthy"
	}
	return "unknown"
}

func principalText(m *config.PrincipalMatch) string {
	if m == nil {
		return ""
	}
	var parts []string
	if len(m.Principals) > 0 {
		parts = append(parts, "principals "+strings.Join(m.Principals, ", "))
	}
	if len(m.Roles) > 0 {
		parts = append(parts, "roles "+strings.Join(m.Roles, ", "))
	}
	if len(m.Scopes) > 0 {
		parts = append(parts, "scopes "+strings.Join(m.Scopes, ", "))
	}
	return strings.Join(parts, "; ")
}
