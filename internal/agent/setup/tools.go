package setup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/arvenza/helix/internal/agent/mcptools"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// catalogueRef is a tools: entry naming an entry of the application's catalogue.
type catalogueRef struct {
	id, typ, desc string
	pos           config.Pos
	path          string
}

// mcpServer is a tools: entry of type mcp.
type mcpServer struct {
	label string // "MCP tool entry browser"
	// srv is made at build time, or — when its mTLS files are not there yet — at
	// start from opts (see addMCP).
	srv  *mcptools.Server
	opts mcptools.Options
}

func (s *mcpServer) start(ctx context.Context) error {
	if s.srv == nil {
		srv, err := mcptools.New(s.opts)
		if err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
		s.srv = srv
	}
	return s.srv.Start(ctx)
}

func (s *mcpServer) stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Stop(ctx)
}

func (s *mcpServer) toolSet(ctx context.Context) (*tool.Set, error) {
	if s.srv == nil {
		return nil, fmt.Errorf("%s is not started", s.label)
	}
	return s.srv.ToolSet(ctx)
}

// toolSource is an agent's tools: the catalogue entries resolved at build time and
// the tools its MCP servers list, combined into one set per run (the same set
// while the servers' tools stay the same).
type toolSource struct {
	agent   string
	refs    []catalogueRef
	servers []*mcpServer

	fixed     []*tool.Tool
	fixedFrom map[string]string // tool name → where it comes from
	fixedSet  *tool.Set

	mu      sync.Mutex
	lastMCP []*tool.Set
	last    *tool.Set
}

// entryPath is the YAML path of tools[i].
func (r *Runner) entryPath(i int, t config.AgentToolConfig) string {
	if t.Path != "" {
		return t.Path
	}
	return config.IndexPath(config.KeyPath(r.path, "tools"), i)
}

var toolTypes = []string{ToolMCP, ToolWorkflow, ToolTool, ToolAgent, ToolPipeline}

// addTool checks one tools: entry and records it.
func (r *Runner) addTool(i int, t config.AgentToolConfig) config.Errors {
	p := r.entryPath(i, t)
	pos := t.Pos
	if pos.Line == 0 {
		pos = r.cfg.Pos
	}
	typ := strings.ToLower(strings.TrimSpace(t.Type))
	if typ == "" && t.MCPServer != nil {
		typ = ToolMCP
	}
	fail := func(p, hint, format string, args ...any) config.Errors {
		return config.Errors{{Pos: pos, Path: p, Msg: fmt.Sprintf("agent %q: ", r.id) + fmt.Sprintf(format, args...), Hint: hint}}
	}
	switch typ {
	case ToolMCP:
		return r.addMCP(t, p, pos)
	case "", ToolWorkflow, ToolTool, ToolAgent, ToolPipeline:
		if t.MCPServer != nil {
			return fail(config.KeyPath(p, "mcp_server"), "write type: mcp for an MCP server's tools", "mcp_server: belongs to tools of type mcp")
		}
		if t.Name == "" {
			return fail(p, "name the id of a workflow, a tools: entry, an agent or a pipeline, or use type: mcp with mcp_server:", "a tool entry needs a name")
		}
		if r.cfg.ID != "" && t.Name == r.cfg.ID {
			return fail(p, "an agent cannot call itself; remove this entry", "lists itself as a tool")
		}
		r.source.refs = append(r.source.refs, catalogueRef{id: t.Name, typ: typ, desc: t.Description, pos: pos, path: p})
		return nil
	}
	hint := config.DidYouMean(typ, toolTypes)
	if hint == "" {
		hint = "types: " + strings.Join(toolTypes, ", ")
	}
	return fail(config.KeyPath(p, "type"), hint, "unknown tool type %q", t.Type)
}

// addMCP prepares the MCP server of a type: mcp entry; nothing is dialled or spawned.
func (r *Runner) addMCP(t config.AgentToolConfig, p string, pos config.Pos) config.Errors {
	var errs config.Errors
	fail := func(pos config.Pos, p, hint, format string, args ...any) {
		errs = append(errs, &config.Error{Pos: pos, Path: p, Msg: fmt.Sprintf("agent %q: ", r.id) + fmt.Sprintf(format, args...), Hint: hint})
	}
	ms := t.MCPServer
	if ms == nil {
		fail(pos, p, "for example mcp_server: {url: http://localhost:3100} or {command: npx, args: [\"@playwright/mcp\"]}", "a tool of type mcp needs mcp_server:")
		return errs
	}
	msPos := ms.Pos
	if msPos.Line == 0 {
		msPos = pos
	}
	msPath := config.KeyPath(p, "mcp_server")
	conn := mcpclient.Config{
		Transport: strings.ToLower(strings.TrimSpace(ms.Transport)),
		Endpoint:  ms.URL, Command: ms.Command, Args: ms.Args,
		Timeout: ms.Timeout, Logger: r.deps.Logger, Stderr: r.deps.Stderr,
	}
	if conn.Stderr == nil {
		conn.Stderr = os.Stderr
	}
	if conn.Transport == "" {
		conn.Transport = mcpclient.TransportHTTP
		if ms.Command != "" && ms.URL == "" {
			conn.Transport = mcpclient.TransportStdio
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ms.Env)) {
		conn.Env = append(conn.Env, k+"="+ms.Env[k])
	}
	if conn.Transport != mcpclient.TransportStdio && hasNoPath(ms.URL) {
		// Like mcp://host:port: try /mcp, then the root, as servers differ.
		conn.FindPath = true
	}
	if t.Auth != nil {
		authPos := t.AuthPos
		if authPos.Line == 0 {
			authPos = pos
		}
		authPath := config.KeyPath(p, "auth")
		if conn.Transport == mcpclient.TransportStdio {
			fail(authPos, authPath, "a stdio server is a local subprocess; pass credentials to it with mcp_server.env", "auth: applies to http and sse MCP servers")
		} else if a, err := mcpclient.ParseAuth(t.Auth); err != nil {
			// The path already ends in .auth; drop ParseAuth's own "auth: " prefix.
			fail(authPos, authPath, "", "%s", strings.TrimPrefix(err.Error(), "auth: "))
		} else {
			conn.Auth = a
		}
	}
	conn.Answers = r.mcpAnswers(t, p, pos, fail) // sampling.go
	if len(errs) > 0 {
		return errs
	}
	if err := conn.Validate(); err != nil {
		fail(msPos, msPath, "", "%v", err)
		return errs
	}
	name := t.Name
	label := "MCP tool entry " + name
	if name == "" {
		label = "MCP tool entry"
	}
	opts := mcptools.Options{Name: label, Conn: conn, Include: t.Include, Exclude: t.Exclude}
	if missing := missingFiles(conn.Auth); len(missing) > 0 {
		// Certificates are often mounted only where the application runs: validating
		// the file elsewhere warns, and the files are read when the agent starts.
		authPos := t.AuthPos
		if authPos.Line == 0 {
			authPos = pos
		}
		r.warnings = append(r.warnings, &config.Error{Pos: authPos, Path: config.KeyPath(p, "auth"),
			Msg:  fmt.Sprintf("agent %q: %s not found here; the agent fails to start unless it exists where Helix runs", r.id, strings.Join(missing, ", ")),
			Hint: "check the path, or ignore this where the certificates are mounted at run time"})
		r.source.servers = append(r.source.servers, &mcpServer{label: label, opts: opts})
		return nil
	}
	srv, err := mcptools.New(opts)
	if err != nil {
		fail(msPos, msPath, "", "%v", err)
		return errs
	}
	r.source.servers = append(r.source.servers, &mcpServer{label: label, srv: srv, opts: opts})
	return nil
}

// missingFiles lists the mTLS files of auth that do not exist.
func missingFiles(auth *mcpclient.AuthConfig) []string {
	if auth == nil || auth.Type != mcpclient.AuthMTLS {
		return nil
	}
	var missing []string
	for _, f := range []struct{ key, path string }{{"cert_file", auth.CertFile}, {"key_file", auth.KeyFile}, {"ca_file", auth.CAFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, f.key+" "+f.path)
		}
	}
	return missing
}

func hasNoPath(raw string) bool {
	rest, ok := strings.CutPrefix(raw, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(raw, "https://")
	}
	if !ok {
		return false
	}
	i := strings.IndexByte(rest, '/')
	return i < 0 || rest[i:] == "/"
}

// Resolve looks up the agent's catalogue entries (workflows, tools: entries, other
// agents) in cat, which must hold every entry of the application by now. Unknown
// ids are errors at the entry's position, with a did-you-mean.
func (r *Runner) Resolve(cat *tool.Catalogue) config.Errors {
	s := r.source
	var errs config.Errors
	var known []string
	for _, t := range cat.Tools() {
		known = append(known, t.ID)
	}
	s.fixed, s.fixedFrom = nil, map[string]string{}
	for _, ref := range s.refs {
		fail := func(hint, format string, args ...any) {
			errs = append(errs, &config.Error{Pos: ref.pos, Path: ref.path, Msg: fmt.Sprintf("agent %q: ", r.id) + fmt.Sprintf(format, args...), Hint: hint})
		}
		t, ok := cat.Tool(ref.id)
		if !ok {
			var unknown *tool.UnknownError
			if _, err := cat.Select([]string{ref.id}); err != nil && !errors.As(err, &unknown) {
				fail("", "tool %q cannot be called: %v", ref.id, err)
				continue
			}
			hint := config.DidYouMean(ref.id, known)
			if hint == "" {
				hint = "tools name workflows (with a trigger), tools: entries, agents and pipelines by id"
			}
			fail(hint, "tool %q: no workflow, tools: entry, agent or pipeline with this id", ref.id)
			continue
		}
		if ref.typ != "" && engine.Kind(ref.typ) != t.Kind {
			fail("remove type:, or correct it", "tool %q is a %s, not a %s", ref.id, kindName(t.Kind), ref.typ)
			continue
		}
		if err := t.Problem(); err != nil {
			fail("", "tool %q cannot be called: %v", ref.id, err)
			continue
		}
		if ref.desc != "" {
			var err error
			if t, err = t.WithInput(ref.desc, nil); err != nil {
				fail("", "%v", err)
				continue
			}
		}
		from := kindName(t.Kind) + " " + fmt.Sprintf("%q", t.ID)
		if other, dup := s.fixedFrom[t.Name]; dup {
			fail("list each entry once; ids that differ only in '.', '-' or '/' make the same tool name",
				"tool name %q is given by both %s and %s", t.Name, other, from)
			continue
		}
		s.fixedFrom[t.Name] = from
		s.fixed = append(s.fixed, t)
	}
	if len(errs) > 0 {
		return errs
	}
	if len(s.fixed) > 0 {
		set, err := tool.NewSet(s.fixed)
		if err != nil {
			return config.Errors{{Pos: r.cfg.Pos, Path: config.KeyPath(r.path, "tools"), Msg: fmt.Sprintf("agent %q: %v", r.id, err)}}
		}
		s.fixedSet = set
	}
	return nil
}

func kindName(k engine.Kind) string {
	if k == "" {
		return string(engine.KindWorkflow)
	}
	return string(k)
}

// ToolSet returns the tools of one run: the catalogue entries and every MCP
// server's tools. A server that cannot list its tools fails the run, naming it;
// two tools with one name are an error naming both sources.
func (s *toolSource) ToolSet(ctx context.Context) (*tool.Set, error) {
	if len(s.servers) == 0 {
		return s.fixedSet, nil
	}
	sets := make([]*tool.Set, len(s.servers))
	for i, srv := range s.servers {
		set, err := srv.toolSet(ctx)
		if err != nil {
			return nil, err // mcptools names the server
		}
		sets[i] = set
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && slices.Equal(sets, s.lastMCP) {
		return s.last, nil
	}
	from := maps.Clone(s.fixedFrom)
	if from == nil {
		from = map[string]string{}
	}
	all := slices.Clone(s.fixed)
	for i, set := range sets {
		if set == nil {
			continue
		}
		for _, t := range set.Tools() {
			if other, dup := from[t.Name]; dup {
				return nil, fmt.Errorf("agent %q: tool name %q is given by both %s and %s; leave it out of one of them (exclude: on the MCP tool entry)",
					s.agent, t.Name, other, s.servers[i].label)
			}
			from[t.Name] = s.servers[i].label
			all = append(all, t)
		}
	}
	set, err := tool.NewSet(all)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", s.agent, err)
	}
	s.last, s.lastMCP = set, sets
	return set, nil
}
