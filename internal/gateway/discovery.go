package gateway

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/redact"
)

// maxListPages bounds the pages of one listing: an upstream that hands out
// cursors forever must not keep the gateway listing.
const maxListPages = 1000

// endpointOf names an upstream's endpoint for status and logs, without secrets.
func endpointOf(u config.UpstreamConfig) string {
	if u.Transport == config.UpstreamStdio {
		return strings.TrimSpace(u.Command + " " + strings.Join(u.Args, " "))
	}
	return redact.URL(u.URL)
}

// included applies an upstream's include: and exclude: to one of its own names.
func (up *upstream) included(name string) bool {
	if len(up.cfg.Include) > 0 {
		in := false
		for _, g := range up.cfg.Include {
			if ok, _ := path.Match(g, name); ok {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	for _, g := range up.cfg.Exclude {
		if ok, _ := path.Match(g, name); ok {
			return false
		}
	}
	return true
}

// discoverySession is the upstream's shared session, which lists what it
// serves and receives its list_changed notifications.
func (g *Gateway) discoverySession(ctx context.Context, up *upstream) (*sdk.ClientSession, error) {
	h, err := up.creds.Header(ctx, &Principal{})
	if err != nil {
		return nil, err
	}
	ctx = WithUpstreamHeader(ctx, h)
	return up.pool.Session(ctx, SessionKey{}, g.clientOptions(up))
}

// discover lists everything the upstream serves and brings the server's
// primitives in line with it.
func (g *Gateway) discover(ctx context.Context, up *upstream) error {
	err := g.discoverKinds(ctx, up, true, true, true)
	up.mu.Lock()
	if err != nil {
		up.lastErr = redact.URLsIn(err.Error())
	} else {
		up.lastErr, up.discovered = "", true
	}
	found := fmt.Sprintf("gateway upstream %s: %d tools, %d prompts, %d resources, %d resource templates (protocol %s)",
		up.cfg.ID, len(up.tools), len(up.prompts), len(up.resources), len(up.templates), up.protocol)
	up.mu.Unlock()
	if err == nil {
		// What a new user wants to see first: the upstream answered, and what it serves.
		g.logger.Info(found, "server", g.opts.ServerID, "upstream", up.cfg.ID)
	}
	return err
}

func (g *Gateway) discoverKinds(ctx context.Context, up *upstream, tools, prompts, resources bool) error {
	cs, err := g.discoverySession(ctx, up)
	if err != nil {
		return err
	}
	caps := &sdk.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
		up.mu.Lock()
		up.protocol = ir.ProtocolVersion
		up.mu.Unlock()
	}
	if tools && caps.Tools != nil {
		list, err := listAll(ctx, func(ctx context.Context, cursor string) ([]*sdk.Tool, string, error) {
			r, err := cs.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Tools, r.NextCursor, nil
		})
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if err := g.serveTools(up, list); err != nil {
			return err
		}
	}
	if prompts && caps.Prompts != nil {
		list, err := listAll(ctx, func(ctx context.Context, cursor string) ([]*sdk.Prompt, string, error) {
			r, err := cs.ListPrompts(ctx, &sdk.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Prompts, r.NextCursor, nil
		})
		if err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
		g.servePrompts(up, list)
	}
	if resources && caps.Resources != nil {
		list, err := listAll(ctx, func(ctx context.Context, cursor string) ([]*sdk.Resource, string, error) {
			r, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Resources, r.NextCursor, nil
		})
		if err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		tpls, err := listAll(ctx, func(ctx context.Context, cursor string) ([]*sdk.ResourceTemplate, string, error) {
			r, err := cs.ListResourceTemplates(ctx, &sdk.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.ResourceTemplates, r.NextCursor, nil
		})
		if err != nil {
			return fmt.Errorf("resources/templates/list: %w", err)
		}
		g.serveResources(up, list, tpls)
	}
	return nil
}

// listAll follows a listing's cursors.
func listAll[T any](ctx context.Context, page func(context.Context, string) ([]T, string, error)) ([]T, error) {
	var out []T
	cursor := ""
	for range maxListPages {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("more than %d pages", maxListPages)
}

// serveTools makes the server's tools of up those of list (prefixed, filtered):
// new ones are added, gone ones removed. A name of Helix's own tools is an
// error (a *server.NameClashError); the rest are still served.
func (g *Gateway) serveTools(up *upstream, list []*sdk.Tool) error {
	want := map[string]*sdk.Tool{}
	for _, t := range list {
		if t == nil || !up.included(t.Name) {
			continue
		}
		served := *t
		served.Name = up.prefix + t.Name
		want[served.Name] = &served
	}
	up.mu.Lock()
	var gone []string
	for name := range up.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(up.tools, name)
			delete(up.defs, name)
		}
	}
	up.mu.Unlock()
	g.host.RemoveTools(gone...)
	var clash error
	for name, t := range want {
		if other := g.toolOwner(name); other != nil && other != up {
			g.logger.Warn("gateway: two upstreams serve a tool of the same name; the first keeps it", "server", g.opts.ServerID,
				"tool", name, "kept", other.cfg.ID, "ignored", up.cfg.ID)
			continue
		}
		upstreamName := strings.TrimPrefix(name, up.prefix)
		if err := g.host.AddTool(t, g.toolHandler(up, name, upstreamName)); err != nil {
			var nc *server.NameClashError
			if errors.As(err, &nc) {
				clash = errors.Join(clash, err)
			} else {
				g.logger.Warn("gateway: upstream tool not served", "server", g.opts.ServerID, "upstream", up.cfg.ID, "error", err)
			}
			continue
		}
		up.mu.Lock()
		up.tools[name] = upstreamName
		if up.defs == nil {
			up.defs = map[string]*sdk.Tool{}
		}
		up.defs[name] = t
		up.mu.Unlock()
	}
	return clash
}

func (g *Gateway) toolOwner(name string) *upstream {
	for _, up := range g.ups {
		up.mu.Lock()
		_, ok := up.tools[name]
		up.mu.Unlock()
		if ok {
			return up
		}
	}
	return nil
}

func (g *Gateway) servePrompts(up *upstream, list []*sdk.Prompt) {
	want := map[string]*sdk.Prompt{}
	for _, p := range list {
		if p == nil || !up.included(p.Name) {
			continue
		}
		served := *p
		served.Name = up.prefix + p.Name
		want[served.Name] = &served
	}
	up.mu.Lock()
	var gone []string
	for name := range up.prompts {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(up.prompts, name)
		}
	}
	up.mu.Unlock()
	g.mu.Lock()
	for _, n := range gone {
		delete(g.prompts, n)
	}
	g.mu.Unlock()
	g.host.RemovePrompts(gone...)
	for name, p := range want {
		g.mu.Lock()
		other := g.prompts[name]
		g.mu.Unlock()
		if other != nil && other != up {
			g.logger.Warn("gateway: two upstreams serve a prompt of the same name; the first keeps it", "server", g.opts.ServerID,
				"prompt", name, "kept", other.cfg.ID, "ignored", up.cfg.ID)
			continue
		}
		upstreamName := strings.TrimPrefix(name, up.prefix)
		if err := g.host.AddPrompt(p, g.promptHandler(up, name, upstreamName)); err != nil {
			g.logger.Warn("gateway: upstream prompt not served", "server", g.opts.ServerID, "upstream", up.cfg.ID, "error", err)
			continue
		}
		g.mu.Lock()
		g.prompts[name] = up
		g.mu.Unlock()
		up.mu.Lock()
		up.prompts[name] = upstreamName
		up.mu.Unlock()
	}
}

// serveResources serves up's resources and templates under the URIs the
// upstream wrote: a URI that another upstream serves already stays with it.
func (g *Gateway) serveResources(up *upstream, list []*sdk.Resource, tpls []*sdk.ResourceTemplate) {
	want := map[string]*sdk.Resource{}
	for _, r := range list {
		if r != nil {
			want[r.URI] = r
		}
	}
	wantT := map[string]*sdk.ResourceTemplate{}
	for _, t := range tpls {
		if t != nil {
			wantT[t.URITemplate] = t
		}
	}
	up.mu.Lock()
	var gone, goneT []string
	for uri := range up.resources {
		if _, ok := want[uri]; !ok {
			gone = append(gone, uri)
			delete(up.resources, uri)
		}
	}
	for uri := range up.templates {
		if _, ok := wantT[uri]; !ok {
			goneT = append(goneT, uri)
			delete(up.templates, uri)
		}
	}
	up.mu.Unlock()
	g.mu.Lock()
	for _, u := range gone {
		delete(g.resources, u)
	}
	for _, u := range goneT {
		delete(g.templates, u)
	}
	g.mu.Unlock()
	g.host.RemoveResources(gone...)
	g.host.RemoveResourceTemplates(goneT...)
	claim := func(owners map[string]*upstream, uri string) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		if other := owners[uri]; other != nil && other != up {
			g.logger.Warn("gateway: two upstreams serve the same resource URI; the first keeps it", "server", g.opts.ServerID,
				"uri", uri, "kept", other.cfg.ID, "ignored", up.cfg.ID)
			return false
		}
		owners[uri] = up
		return true
	}
	for uri, r := range want {
		if !claim(g.resources, uri) {
			continue
		}
		if err := g.host.AddResource(r, g.resourceHandler(up)); err != nil {
			g.mu.Lock()
			delete(g.resources, uri)
			g.mu.Unlock()
			g.logger.Warn("gateway: upstream resource not served", "server", g.opts.ServerID, "upstream", up.cfg.ID, "error", err)
			continue
		}
		up.mu.Lock()
		up.resources[uri] = true
		up.mu.Unlock()
	}
	for uri, t := range wantT {
		if !claim(g.templates, uri) {
			continue
		}
		if err := g.host.AddResourceTemplate(t, g.resourceHandler(up)); err != nil {
			g.mu.Lock()
			delete(g.templates, uri)
			g.mu.Unlock()
			g.logger.Warn("gateway: upstream resource template not served", "server", g.opts.ServerID, "upstream", up.cfg.ID, "error", err)
			continue
		}
		up.mu.Lock()
		up.templates[uri] = true
		up.mu.Unlock()
	}
}

// refresh lists one kind again after the upstream said it changed. Refreshes
// of one upstream run one at a time; asks that arrive meanwhile make one more.
func (g *Gateway) refresh(up *upstream, tools, prompts, resources bool) {
	up.mu.Lock()
	if up.refreshing {
		up.again = true
		up.mu.Unlock()
		return
	}
	up.refreshing = true
	up.mu.Unlock()
	g.background(func() {
		for {
			if g.ctx.Err() != nil {
				return
			}
			ctx, cancel := context.WithTimeout(g.ctx, min(up.timeout, DiscoveryTimeout))
			err := g.discoverKinds(ctx, up, tools, prompts, resources)
			cancel()
			if err != nil && g.ctx.Err() == nil {
				g.logger.Warn("gateway: upstream listing after list_changed failed", "server", g.opts.ServerID,
					"upstream", up.cfg.ID, "error", redact.URLsIn(err.Error()))
			}
			up.mu.Lock()
			if !up.again {
				up.refreshing = false
				up.mu.Unlock()
				return
			}
			up.again = false
			tools, prompts, resources = true, true, true
			up.mu.Unlock()
		}
	})
}
