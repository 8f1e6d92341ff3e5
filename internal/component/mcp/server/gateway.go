package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/arvenza/helix/internal/component/mcp/transport"
)

// Extension serves primitives that are not workflows and that change while the
// server runs: the tools, prompts, resources and completions of the MCP servers a
// gateway fronts (internal/gateway). The server asks it about what it does not
// own itself (completions, subscriptions) and lets it add and remove its
// primitives through an [ExtensionHost]; every change is announced to the
// connected sessions with a list_changed notification.
type Extension interface {
	// Attach runs when the server starts, once its own tools are built and
	// before it serves: the extension adds its primitives through host (and may
	// go on changing them until Close). An error stops the server's start: a
	// name of the extension equal to one of the server's own tools is one.
	Attach(ctx context.Context, host *ExtensionHost) error
	// Middleware is receiving middleware of the go-sdk server (for the requests
	// the extension relays besides its primitives: logging/setLevel, the lists
	// it filters per caller); nil for none. It does not run on the tools/call
	// fast path.
	Middleware() sdk.Middleware
	// Complete answers completion/complete for a prompt or template of the
	// extension; handled is false for references it does not know.
	Complete(ctx context.Context, req *sdk.CompleteRequest) (res *sdk.CompleteResult, handled bool, err error)
	// Subscribe and Unsubscribe handle resources/subscribe and
	// resources/unsubscribe for the extension's resources; handled is false for
	// URIs it does not serve.
	Subscribe(ctx context.Context, req *sdk.SubscribeRequest) (handled bool, err error)
	Unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) (handled bool, err error)
	// Close runs when the server stops, after its calls ended.
	Close(ctx context.Context) error
}

// SendingExtension is an Extension that also has sending middleware of the
// go-sdk server (for what it sends the client on behalf of its primitives:
// the gateway sees the client's raw answers to the requests it relays).
type SendingExtension interface {
	Extension
	SendingMiddleware() sdk.Middleware
}

// Audience is a virtual server on the server's listener: requests to Path (and
// below it) see only the tools and prompts whose names match one of Names
// (globs, path.Match), and sessions opened there stay there.
type Audience struct {
	Path  string
	Names []string
}

// ExtensionHost is what an Extension changes the running server through. Its
// methods are safe for concurrent use.
type ExtensionHost struct {
	s   *mcpServer
	srv *sdk.Server

	mu    sync.Mutex
	own   map[string]string // the server's own tool names → their workflow ids
	tools map[string]sdk.ToolHandler
	infos map[string]*sdk.Tool
	// params are the x-mcp-header bindings of the tools' input schemas: the
	// transport checks a call's Mcp-Param-* headers against them before the
	// call is relayed, as for the server's own tools.
	params map[string][]transport.ParamHeader
}

func newExtensionHost(s *mcpServer, srv *sdk.Server, own []*serverTool) *ExtensionHost {
	h := &ExtensionHost{s: s, srv: srv, own: map[string]string{}, tools: map[string]sdk.ToolHandler{}, infos: map[string]*sdk.Tool{},
		params: map[string][]transport.ParamHeader{}}
	for _, t := range own {
		h.own[t.info.Name] = t.info.WorkflowID
	}
	return h
}

// NameClashError is a name of an extension's primitive that one of the server's
// own tools already has.
type NameClashError struct {
	Name     string
	Workflow string // the Helix tool's workflow id
}

func (e *NameClashError) Error() string {
	return fmt.Sprintf("the tool name %q is both Helix's tool (workflow %s) and an upstream's tool; rename one, or give the upstream a prefix", e.Name, e.Workflow)
}

// AddTool serves t (as the upstream listed it) with handler, replacing an
// extension tool of the same name. A name of the server's own tools is a
// *NameClashError; a tool the go-sdk refuses (a missing or non-object input
// schema) is an error, and nothing is added.
func (h *ExtensionHost) AddTool(t *sdk.Tool, handler sdk.ToolHandler) (err error) {
	if t == nil || t.Name == "" {
		return fmt.Errorf("a tool without a name")
	}
	h.mu.Lock()
	if wid, clash := h.own[t.Name]; clash {
		h.mu.Unlock()
		return &NameClashError{Name: t.Name, Workflow: wid}
	}
	h.mu.Unlock()
	if err := checkInputSchema(t); err != nil {
		return err
	}
	schema, _ := json.Marshal(t.InputSchema) // checkInputSchema marshalled it
	params, err := transport.ParamHeaders(schema)
	if err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	// The go-sdk panics on a tool it cannot serve, before it takes any lock: an
	// upstream's odd tool must not take the gateway down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %q cannot be served: %v", t.Name, r)
		}
	}()
	h.srv.AddTool(t, withInputRequests(handler))
	h.mu.Lock()
	h.tools[t.Name], h.infos[t.Name], h.params[t.Name] = handler, t, params
	h.mu.Unlock()
	return nil
}

// withInputRequests answers a 2026-07-28 call whose run asked the client
// something (through the call's input-required client) with those questions,
// as Helix's own tools do (finishInputCall); the retry brings the answers.
func withInputRequests(handler sdk.ToolHandler) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := handler(ctx, req)
		if _, asked := ctx.Value(inputCallKey{}).(*inputCall); !asked {
			return res, err
		}
		out, ferr := finishInputCall(ctx, res)
		switch {
		case ferr != nil:
			return nil, ferr
		case out != res:
			return out, nil // questions pending
		}
		return res, err
	}
}

// checkInputSchema is the go-sdk's condition on a tool's input schema, checked
// first so that the tool is refused with an error.
func checkInputSchema(t *sdk.Tool) error {
	if t.InputSchema == nil {
		return fmt.Errorf("tool %q has no input schema", t.Name)
	}
	b, err := json.Marshal(t.InputSchema)
	if err != nil {
		return fmt.Errorf("tool %q: input schema: %v", t.Name, err)
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m["type"] != "object" {
		return fmt.Errorf(`tool %q: the input schema is not an object schema ("type": "object")`, t.Name)
	}
	return nil
}

// RemoveTools stops serving the named extension tools (never the server's own).
func (h *ExtensionHost) RemoveTools(names ...string) {
	h.mu.Lock()
	var gone []string
	for _, n := range names {
		if _, ok := h.tools[n]; ok {
			delete(h.tools, n)
			delete(h.infos, n)
			delete(h.params, n)
			gone = append(gone, n)
		}
	}
	h.mu.Unlock()
	if len(gone) > 0 {
		h.srv.RemoveTools(gone...)
	}
}

// Tools returns the names of the extension's tools now served.
func (h *ExtensionHost) Tools() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.tools))
	for n := range h.tools {
		out = append(out, n)
	}
	return out
}

// paramHeaders returns the x-mcp-header bindings of the extension's tool name.
func (h *ExtensionHost) paramHeaders(name string) []transport.ParamHeader {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.params[name]
}

// tool returns the extension's tool named name, for the fast path.
func (h *ExtensionHost) tool(name string) (sdk.ToolHandler, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.tools[name]
	return t, ok
}

// AddPrompt serves p with handler; a name of the server's own prompts is an error.
func (h *ExtensionHost) AddPrompt(p *sdk.Prompt, handler sdk.PromptHandler) error {
	if p == nil || p.Name == "" {
		return fmt.Errorf("a prompt without a name")
	}
	for _, own := range h.s.opts.Prompts {
		if own != nil && own.Name == p.Name {
			return fmt.Errorf("the prompt name %q is both Helix's prompt and an upstream's; rename one, or give the upstream a prefix", p.Name)
		}
	}
	h.srv.AddPrompt(p, promptWithInputRequests(handler))
	return nil
}

// promptWithInputRequests is withInputRequests for an extension's prompts/get.
func promptWithInputRequests(handler sdk.PromptHandler) sdk.PromptHandler {
	return func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		res, err := handler(ctx, req)
		if out, asked, ierr := finishInputPrompt(ctx); asked {
			return out, ierr
		}
		return res, err
	}
}

// resourceWithInputRequests is withInputRequests for an extension's resources/read.
func resourceWithInputRequests(handler sdk.ResourceHandler) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		res, err := handler(ctx, req)
		if pending, state, asked, ierr := finishInputRequest(ctx); asked {
			if ierr != nil {
				return nil, ierr
			}
			return &sdk.ReadResourceResult{InputRequests: pending, RequestState: state}, nil
		}
		return res, err
	}
}

// RemovePrompts stops serving the named extension prompts.
func (h *ExtensionHost) RemovePrompts(names ...string) { h.srv.RemovePrompts(names...) }

// AddResource serves r with handler; a URI of the server's own resources, or one
// that is not an absolute URI, is an error.
func (h *ExtensionHost) AddResource(r *sdk.Resource, handler sdk.ResourceHandler) error {
	if r == nil {
		return fmt.Errorf("a resource without a URI")
	}
	if u, err := url.Parse(r.URI); err != nil || u.Scheme == "" {
		return fmt.Errorf("resource URI %q is not an absolute URI", r.URI)
	}
	for _, own := range h.s.opts.Resources {
		if own != nil && own.URI == r.URI {
			return fmt.Errorf("resource %s is both Helix's resource and an upstream's", r.URI)
		}
	}
	h.srv.AddResource(r, resourceWithInputRequests(handler))
	return nil
}

// RemoveResources stops serving the extension resources with these URIs.
func (h *ExtensionHost) RemoveResources(uris ...string) { h.srv.RemoveResources(uris...) }

// AddResourceTemplate serves t with handler; an invalid template is an error.
func (h *ExtensionHost) AddResourceTemplate(t *sdk.ResourceTemplate, handler sdk.ResourceHandler) error {
	if t == nil {
		return fmt.Errorf("a resource template without a URI template")
	}
	if _, err := uritemplate.New(t.URITemplate); err != nil {
		return fmt.Errorf("URI template %q is invalid: %v", t.URITemplate, err)
	}
	h.srv.AddResourceTemplate(t, resourceWithInputRequests(handler))
	return nil
}

// RemoveResourceTemplates stops serving the extension templates.
func (h *ExtensionHost) RemoveResourceTemplates(uriTemplates ...string) {
	h.srv.RemoveResourceTemplates(uriTemplates...)
}

// ResourceUpdated tells the sessions subscribed to params.URI that it changed.
func (h *ExtensionHost) ResourceUpdated(ctx context.Context, params *sdk.ResourceUpdatedNotificationParams) error {
	return h.srv.ResourceUpdated(ctx, params)
}

// Sessions returns the server's connected sessions.
func (h *ExtensionHost) Sessions() []*sdk.ServerSession {
	var out []*sdk.ServerSession
	for ss := range h.srv.Sessions() {
		out = append(out, ss)
	}
	return out
}

// RequestContext returns the context of the HTTP request that carries req (with
// what the security stack learnt about the caller), or nil outside HTTP.
func (h *ExtensionHost) RequestContext(req sdk.Request) context.Context {
	if req == nil {
		return nil
	}
	ex := req.GetExtra()
	if ex == nil || ex.Header == nil {
		return nil
	}
	return h.s.posts.lookup(ex.Header)
}

// ServerID is the server's id.
func (h *ExtensionHost) ServerID() string { return h.s.opts.ID }

// audienceHeader carries the audience a request was sent to (its path), from
// the HTTP handler to the receiving middleware; set by the server on every
// request, overwriting any value a client sent.
const audienceHeader = "X-Helix-Mcp-Audience"

// AudienceOf returns the path of the audience req was sent to; "" for the
// server's own paths.
func AudienceOf(req sdk.Request) string {
	if req == nil {
		return ""
	}
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		return ex.Header.Get(audienceHeader)
	}
	return ""
}

// audiences routes requests to their virtual servers.
type audiences struct {
	list []Audience
	// sessions remembers the audience each session was opened at, so that a
	// session of /mcp/support cannot be used through /mcp to see everything.
	mu       sync.Mutex
	sessions map[string]string
}

func newAudiences(list []Audience) *audiences {
	if len(list) == 0 {
		return nil
	}
	return &audiences{list: list, sessions: map[string]string{}}
}

// match returns the audience of an HTTP path: the longest audience path equal
// to p or above it.
func (a *audiences) match(p string) *Audience {
	var best *Audience
	for i := range a.list {
		ap := strings.TrimSuffix(a.list[i].Path, "/")
		if (p == ap || strings.HasPrefix(p, ap+"/")) && (best == nil || len(ap) > len(best.Path)) {
			best = &a.list[i]
		}
	}
	return best
}

// tag sets audienceHeader on every request from its path.
func (a *audiences) tag(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(audienceHeader)
		if au := a.match(r.URL.Path); au != nil {
			r.Header.Set(audienceHeader, au.Path)
		}
		next.ServeHTTP(w, r)
	})
}

// allows reports whether the audience at path serves the tool or prompt name.
func (a *audiences) allows(audPath, name string) bool {
	if audPath == "" {
		return true
	}
	for _, au := range a.list {
		if au.Path != audPath {
			continue
		}
		for _, g := range au.Names {
			if ok, _ := path.Match(g, name); ok {
				return true
			}
		}
		return false
	}
	return false
}

// bind checks that a session is used at the audience it was opened at.
func (a *audiences) bind(req sdk.Request, audPath string) error {
	ss, _ := req.GetSession().(*sdk.ServerSession)
	if ss == nil || ss.ID() == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	first, seen := a.sessions[ss.ID()]
	if !seen {
		if len(a.sessions) >= maxAudienceSessions {
			clear(a.sessions) // sessions end without telling; forget the oldest wholesale
		}
		a.sessions[ss.ID()] = audPath
		return nil
	}
	if first != audPath {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "this session belongs to another endpoint of the server: send its requests to the path it was opened at"}
	}
	return nil
}

// maxAudienceSessions bounds the memory of sessions' audiences.
const maxAudienceSessions = 100000

// middleware filters lists and refuses calls outside the request's audience.
func (a *audiences) middleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			aud := AudienceOf(req)
			if err := a.bind(req, aud); err != nil {
				return nil, err
			}
			if aud == "" {
				return next(ctx, method, req)
			}
			switch r := req.(type) {
			case *sdk.CallToolRequest:
				if r.Params != nil && !a.allows(aud, r.Params.Name) {
					return nil, unknownToolError(r.Params.Name)
				}
			case *sdk.GetPromptRequest:
				if r.Params != nil && !a.allows(aud, r.Params.Name) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", r.Params.Name)}
				}
			}
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			switch lr := res.(type) {
			case *sdk.ListToolsResult:
				kept := lr.Tools[:0:0]
				for _, t := range lr.Tools {
					if a.allows(aud, t.Name) {
						kept = append(kept, t)
					}
				}
				lr.Tools = kept
			case *sdk.ListPromptsResult:
				kept := lr.Prompts[:0:0]
				for _, p := range lr.Prompts {
					if a.allows(aud, p.Name) {
						kept = append(kept, p)
					}
				}
				lr.Prompts = kept
			}
			return res, nil
		}
	}
}

// receivingMiddleware is the server's receiving middleware, outermost first:
// Options.ReceivingMiddleware, then the audiences' filter. The go-sdk server and
// the fast path run the same list.
func (s *mcpServer) receivingMiddleware() []sdk.Middleware {
	mws := append([]sdk.Middleware{}, s.opts.ReceivingMiddleware...)
	if s.aud == nil && len(s.opts.Audiences) > 0 {
		s.aud = newAudiences(s.opts.Audiences)
	}
	if s.aud != nil {
		mws = append(mws, s.aud.middleware())
	}
	return mws
}

// extensionOptions advertises what an extension may serve (prompts, resources
// and their subscriptions, completions, all changing at runtime) and routes the
// requests the server answers in one place (completions, subscriptions) to the
// extension for what is not the server's own.
func (s *mcpServer) extensionOptions(o *sdk.ServerOptions) {
	ext := s.opts.Extension
	if ext == nil {
		return
	}
	o.Capabilities.Prompts.ListChanged = true
	o.Capabilities.Resources.ListChanged = true
	o.Capabilities.Resources.Subscribe = true
	o.Capabilities.Completions = &sdk.CompletionCapabilities{}
	ownComplete, ownSub, ownUnsub := o.CompletionHandler, o.SubscribeHandler, o.UnsubscribeHandler
	o.CompletionHandler = func(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
		if res, handled, err := ext.Complete(ctx, req); handled {
			return res, err
		}
		if ownComplete != nil {
			return ownComplete(ctx, req)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no completions for this reference"}
	}
	o.SubscribeHandler = func(ctx context.Context, req *sdk.SubscribeRequest) error {
		if handled, err := ext.Subscribe(ctx, req); handled {
			return err
		}
		if ownSub != nil {
			return ownSub(ctx, req)
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resource not found"}
	}
	o.UnsubscribeHandler = func(ctx context.Context, req *sdk.UnsubscribeRequest) error {
		if handled, err := ext.Unsubscribe(ctx, req); handled {
			return err
		}
		if ownUnsub != nil {
			return ownUnsub(ctx, req)
		}
		return nil
	}
}

// attachExtension lets the extension add its primitives to the built server.
func (s *mcpServer) attachExtension(ctx context.Context, srv *sdk.Server) error {
	if s.opts.Extension == nil {
		return nil
	}
	s.mu.Lock()
	host := newExtensionHost(s, srv, s.tools)
	s.ext = host
	inputs := s.inputs
	s.mu.Unlock()
	if inputs != nil {
		// An upstream tool may ask the client something: a 2026-07-28 call gets
		// an input-required client like a Helix tool that asks.
		asks := func(name string) bool { _, ok := host.tool(name); return ok }
		inputs.alsoAsks.Store(&asks)
	}
	if err := s.opts.Extension.Attach(ctx, host); err != nil {
		// The server will not run: let go of what the extension opened.
		_ = s.opts.Extension.Close(context.WithoutCancel(ctx))
		return err
	}
	return nil
}

// slowPath says which calls of extension tools the fast path leaves to the
// go-sdk session: those of MCP 2026-07-28 and later, whose questions to the
// client (an upstream's elicitation) are asked through input-required results,
// which only the session's path (askClient) can give. Older sessions are asked
// directly, on the fast path too.
func (h *ExtensionHost) slowPath(name, version string) bool {
	if version < newEraProtocol {
		return false
	}
	_, ok := h.tool(name)
	return ok
}

// newEraProtocol is the first protocol version that asks clients through
// input-required results.
const newEraProtocol = "2026-07-28"

// callFast runs an extension tool for the tools/call fast path, with the request
// the go-sdk session would have handed it.
func (h *ExtensionHost) callFast(ctx context.Context, r *http.Request, tc *transport.ToolCall, handler sdk.ToolHandler) (*sdk.CallToolResult, error) {
	req := &sdk.CallToolRequest{Session: tc.Session,
		Params: &sdk.CallToolParamsRaw{Meta: tc.CallMeta(), Name: tc.Name, Arguments: tc.Args},
		Extra:  &sdk.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}}
	return handler(ctx, req)
}
