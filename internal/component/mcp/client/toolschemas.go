package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool schemas and Mcp-Param-* headers (protocol 2026-07-28, Streamable HTTP).
//
// A tool's inputSchema may mark arguments with x-mcp-header: the client then copies
// their values into Mcp-Param-<Name> request headers, so that gateways can route on
// them without reading the body. The go-sdk adds those headers from the tool
// definitions its session has listed; an mcp:// target calls its tool without ever
// listing, so the Conn lists the tools of a modern session before the first call,
// and again when the list is older than toolSchemaTTL.
//
// A tool whose annotations are invalid (an empty or non-token header name, one on an
// object, array, number or null property, two properties with the same header) must
// not be called: the go-sdk leaves it out of tools/list, and the Conn refuses a call
// to it without sending anything, with an InvalidToolError that says why.

// toolSchemaTTL is how long a session's tool list is trusted before a call lists the
// tools again. A server that changes its tools announces it
// (notifications/tools/list_changed), but Helix's client keeps no stream open to
// hear it, so the list is refreshed on a timer instead.
const toolSchemaTTL = 5 * time.Minute

// toolList is what the Conn knows about the tools of one session.
type toolList struct {
	sess     *sdk.ClientSession
	listedAt time.Time
	// invalid maps the name of each tool the server listed but the SDK left out to
	// why its x-mcp-header annotations are invalid.
	invalid map[string]string
}

// toolSchemas holds the tool list of the Conn's current session. It is locked
// while listing, so that concurrent first calls list once; a call waiting for the
// lock gives up when its own context ends (calls sharing a Conn may have shorter
// timeouts than the one listing).
type toolSchemas struct {
	lock chan struct{} // holds one token while locked; made by NewConn
	list *toolList
}

// acquire locks s, or returns ctx's error when ctx ends first.
func (s *toolSchemas) acquire(ctx context.Context) error {
	select {
	case s.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *toolSchemas) release() { <-s.lock }

// InvalidToolError is a call refused by the client, without sending it: the server
// declares the tool with x-mcp-header annotations that are not valid.
type InvalidToolError struct {
	Tool   string
	Server string
	Reason string
}

func (e *InvalidToolError) Error() string {
	return fmt.Sprintf("call %s on %s: refused without sending it: the server declares the tool with an invalid x-mcp-header annotation (%s), so its Mcp-Param headers cannot be sent; the server's tool definition must be fixed",
		e.Tool, e.Server, e.Reason)
}

// usesHeaderAnnotations reports whether calls on s carry Mcp-Param headers: sessions
// of protocol 2026-07-28 or later over Streamable HTTP.
func (c *Conn) usesHeaderAnnotations(s *sdk.ClientSession) bool {
	if c.cfg.Transport != TransportHTTP {
		return false
	}
	init := s.InitializeResult()
	return init != nil && init.ProtocolVersion >= protocolModern
}

// checkTool makes sure the tools of s have been listed recently (so the SDK knows
// the x-mcp-header annotations of tool) and refuses a tool whose annotations are
// invalid. A failed listing is logged and the call goes on without Mcp-Param
// headers: the call itself will say whether the server can be reached.
func (c *Conn) checkTool(ctx context.Context, s *sdk.ClientSession, tool string) error {
	if !c.usesHeaderAnnotations(s) {
		return nil
	}
	if err := c.schemas.acquire(ctx); err != nil {
		return err
	}
	defer c.schemas.release()
	l := c.schemas.list
	if l == nil || l.sess != s || c.now().Sub(l.listedAt) >= toolSchemaTTL {
		if _, err := c.listToolSchemasLocked(ctx, s); err != nil {
			if ctx.Err() != nil {
				return err
			}
			c.log.Warn("mcp tools/list before a call failed; calling without Mcp-Param headers", "server", c.cfg.target(), "error", err)
			c.schemas.list = &toolList{sess: s, listedAt: c.now()}
		}
		l = c.schemas.list
	}
	if reason, bad := l.invalid[tool]; bad {
		return &InvalidToolError{Tool: tool, Server: c.cfg.target(), Reason: reason}
	}
	return nil
}

// listToolSchemas lists every page of the tools of s and returns those the SDK
// keeps; on a modern HTTP session it also renews the Conn's tool list, so that an
// agent that lists the tools and then calls them lists once.
func (c *Conn) listToolSchemas(ctx context.Context, s *sdk.ClientSession) ([]*sdk.Tool, error) {
	if !c.usesHeaderAnnotations(s) {
		return listToolPages(ctx, s, nil)
	}
	if err := c.schemas.acquire(ctx); err != nil {
		return nil, err
	}
	defer c.schemas.release()
	return c.listToolSchemasLocked(ctx, s)
}

// listToolSchemasLocked lists the tools of s and makes them the Conn's tool list;
// c.schemas is locked. The SDK caches the definitions it keeps (and uses them for
// Mcp-Param headers); the tools it left out are found by comparing with what the
// server sent (recordToolLists).
func (c *Conn) listToolSchemasLocked(ctx context.Context, s *sdk.ClientSession) ([]*sdk.Tool, error) {
	raw := &rawTools{}
	kept, err := listToolPages(ctx, s, raw)
	if err != nil {
		return nil, err
	}
	l := &toolList{sess: s, listedAt: c.now()}
	if prev := c.schemas.list; raw.pages == 0 && prev != nil && prev.sess == s {
		// The SDK answered from its own cache (the server's ttlMs has not run
		// out): nothing was received, so what was known about the tools holds.
		l.invalid = prev.invalid
	}
	names := make(map[string]bool, len(kept))
	for _, t := range kept {
		names[t.Name] = true
	}
	for _, t := range raw.tools {
		if t == nil || names[t.Name] {
			continue
		}
		if l.invalid == nil {
			l.invalid = map[string]string{}
		}
		l.invalid[t.Name] = headerAnnotationProblem(t.InputSchema)
	}
	c.schemas.list = l
	return kept, nil
}

// maxToolListPages bounds the pages of one listing: a server whose tools/list
// always names a next page would otherwise hold every call until its timeout (or
// forever, without one).
const maxToolListPages = 1000

// listToolPages lists every page of the tools of s; raw, when not nil, receives the
// tools as the server sent them.
func listToolPages(ctx context.Context, s *sdk.ClientSession, raw *rawTools) ([]*sdk.Tool, error) {
	if raw == nil {
		raw = &rawTools{}
	}
	ctx = context.WithValue(ctx, rawToolsKey{}, raw)
	var tools []*sdk.Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if raw.received() > maxToolListPages {
			return nil, fmt.Errorf("tools/list went on for more than %d pages: the server keeps naming a next page", maxToolListPages)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// rawTools collects the tools of tools/list answers as the server sent them, before
// the SDK filters them.
type rawTools struct {
	mu    sync.Mutex
	pages int // tools/list answers received
	tools []*sdk.Tool
}

type rawToolsKey struct{}

func (r *rawTools) received() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pages
}

// recordToolLists is a sending middleware: for a tools/list whose context asks for
// it (listToolSchemas), it keeps the tools of the answer as received.
func recordToolLists(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if raw, ok := ctx.Value(rawToolsKey{}).(*rawTools); ok && err == nil && method == "tools/list" {
			if lr, ok := res.(*sdk.ListToolsResult); ok {
				raw.mu.Lock()
				raw.pages++
				raw.tools = append(raw.tools, lr.Tools...)
				raw.mu.Unlock()
			}
		}
		return res, err
	}
}

// annotatedProperty is the part of an inputSchema property that x-mcp-header
// rules look at.
type annotatedProperty struct {
	Type       any                          `json:"type"`
	Header     json.RawMessage              `json:"x-mcp-header"`
	Properties map[string]annotatedProperty `json:"properties"`
}

// headerAnnotationProblem says what is wrong with the x-mcp-header annotations of
// schema, for the error of a refused call. The go-sdk decides which tools are left
// out; this only explains it, in the terms of the schema.
func headerAnnotationProblem(schema any) string {
	data, err := json.Marshal(schema)
	if err != nil {
		return "its inputSchema cannot be read"
	}
	var root annotatedProperty
	if err := json.Unmarshal(data, &root); err != nil {
		return "its inputSchema cannot be read: " + err.Error()
	}
	seen := map[string]string{}
	if p := annotationProblemIn(root.Properties, "", seen); p != "" {
		return p
	}
	return "the go-sdk's checks of x-mcp-header failed"
}

func annotationProblemIn(props map[string]annotatedProperty, prefix string, seen map[string]string) string {
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p, path := props[n], n
		if prefix != "" {
			path = prefix + "." + n
		}
		if p.Header != nil {
			if problem := headerProblem(p, path, seen); problem != "" {
				return problem
			}
		}
		if problem := annotationProblemIn(p.Properties, path, seen); problem != "" {
			return problem
		}
	}
	return ""
}

func headerProblem(p annotatedProperty, path string, seen map[string]string) string {
	typ, _ := p.Type.(string)
	switch typ {
	case "string", "integer", "boolean":
	default:
		return fmt.Sprintf("property %q: x-mcp-header is only allowed on string, integer and boolean properties, not %s", path, typeName(p.Type))
	}
	var name string
	if err := json.Unmarshal(p.Header, &name); err != nil || name == "" {
		return fmt.Sprintf("property %q: x-mcp-header must be a non-empty string", path)
	}
	for _, r := range name {
		if !isHeaderTokenChar(r) {
			return fmt.Sprintf("property %q: x-mcp-header %q has the character %q, which an HTTP header name cannot have", path, name, r)
		}
	}
	lower := strings.ToLower(name)
	if other, dup := seen[lower]; dup {
		return fmt.Sprintf("properties %q and %q both use x-mcp-header %q (names are case-insensitive)", other, path, name)
	}
	seen[lower] = path
	return ""
}

func typeName(t any) string {
	if t == nil {
		return "an untyped one"
	}
	data, _ := json.Marshal(t)
	return string(data)
}

// isHeaderTokenChar reports whether r may appear in an HTTP field name (tchar).
func isHeaderTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return r < 0x80 && strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// isInvalidTool reports whether err is a call the client refused itself.
func isInvalidTool(err error) bool {
	var e *InvalidToolError
	return errors.As(err, &e)
}
