package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/pkg/engine"
)

// Resource URIs served by every Helix MCP server. RoutesResourceURI is the older
// name, kept because the spec's troubleshooting section still points users at it.
const (
	WorkflowsResourceURI = "helix://workflows"
	RoutesResourceURI    = "helix://routes"
)

// WorkflowEntry is one element of the helix://workflows resource (spec §9.1).
type WorkflowEntry struct {
	ID          string `json:"id"`
	FromURI     string `json:"from_uri"`
	Description string `json:"description"`
	State       string `json:"state"`
}

// WorkflowEntries lists every workflow of hc with its current state, in the order
// they were added, with trigger URIs as written (Workflow.ShownURI). It is read on
// each request so that states are current. MCP servers list only their tools (see
// workflowsResourceHandler).
func WorkflowEntries(hc *engine.Context) []WorkflowEntry {
	wfs := hc.Workflows()
	out := make([]WorkflowEntry, 0, len(wfs))
	for _, wf := range wfs {
		out = append(out, workflowEntry(hc, wf))
	}
	return out
}

func workflowEntry(hc *engine.Context, wf *engine.Workflow) WorkflowEntry {
	from := wf.FromURI
	if wf.ShownURI != "" {
		from = wf.ShownURI
	}
	return WorkflowEntry{ID: wf.ID, FromURI: from, Description: wf.Description, State: hc.WorkflowState(wf.ID)}
}

func addWorkflowResources(s *sdk.Server, hc *engine.Context, tools []*serverTool, allowed func(context.Context, string) error) {
	handler := workflowsResourceHandler(hc, tools, allowed)
	for _, u := range []string{WorkflowsResourceURI, RoutesResourceURI} {
		name := "workflows"
		desc := "The workflows this server offers as tools: id, trigger URI, description and state (Started/Stopped)."
		if u == RoutesResourceURI {
			name = "routes"
			desc = "Alias of " + WorkflowsResourceURI + "."
		}
		s.AddResource(&sdk.Resource{URI: u, Name: name, Description: desc, MIMEType: "application/json"}, handler)
	}
}

// workflowsResourceHandler answers helix://workflows with what the caller may see:
// the workflows the server exposes as tools, filtered as tools/list filters them
// (allowed and blocked tools, OAuth scopes of the caller's token), in the context's
// order, with trigger URIs as written, so that secrets resolved from ${env:…} are
// not shown.
func workflowsResourceHandler(hc *engine.Context, tools []*serverTool, allowed func(context.Context, string) error) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		actx := withCallerToken(ctx, req)
		visible := make(map[string]bool, len(tools))
		for _, t := range tools {
			if allowed == nil || allowed(actx, t.info.Name) == nil {
				visible[t.t.ID] = true
			}
		}
		entries := []WorkflowEntry{}
		for _, wf := range hc.Workflows() {
			if visible[wf.ID] {
				entries = append(entries, workflowEntry(hc, wf))
			}
		}
		data, err := json.MarshalIndent(entries, "", "  ")
		if err != nil {
			return nil, err
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
			URI: req.Params.URI, MIMEType: "application/json", Text: string(data),
		}}}, nil
	}
}

// Resource is one resource (URI set) or resource template (URITemplate set) a
// server offers besides helix://workflows; pkg/app builds them from `resources:`.
// The server reads it through Read and never changes it.
type Resource struct {
	URI         string
	URITemplate string
	Name        string
	Title       string
	Description string
	// MIMEType is advertised in listings; Read may answer a more precise one.
	MIMEType string
	// Read produces the content of uri; vars are the template's variables (nil for
	// a fixed resource). An error wrapping ErrResourceNotFound answers the client
	// "resource not found"; any other error is an internal error.
	Read func(ctx context.Context, uri string, vars map[string]string) (*ResourceContent, error)
	// Match, for a template, returns the variables of uri when it matches.
	Match func(uri string) (map[string]string, bool)
	// Stamp, when set, fingerprints the content cheaply (a file's size and
	// modification time): subscribers of the resource are told when it changes.
	Stamp func() string
	// Complete answers completion/complete for the template's variables (nil:
	// no suggestions).
	Complete CompleteFunc
}

// ResourceContent is what one read of a resource produced: Text, or Blob when
// IsBlob.
type ResourceContent struct {
	MIMEType string
	Text     string
	Blob     []byte
	IsBlob   bool
}

// ErrResourceNotFound is wrapped by Resource.Read errors that mean "there is no
// such resource" (a template's workflow found no order 42).
var ErrResourceNotFound = errors.New("resource not found")

// resourceSet is what one server offers: fixed resources by URI and templates in
// declaration order.
type resourceSet struct {
	fixed     map[string]*Resource
	templates []*Resource
	all       []*Resource
}

func newResourceSet(rs []*Resource) *resourceSet {
	set := &resourceSet{fixed: map[string]*Resource{}}
	for _, r := range rs {
		if r == nil {
			continue
		}
		set.all = append(set.all, r)
		if r.URITemplate != "" {
			set.templates = append(set.templates, r)
		} else {
			set.fixed[r.URI] = r
		}
	}
	return set
}

// lookup finds the resource uri reads: a fixed resource, else the first template
// that matches, with its variables.
func (set *resourceSet) lookup(uri string) (*Resource, map[string]string, bool) {
	if r, ok := set.fixed[uri]; ok {
		return r, nil, true
	}
	for _, t := range set.templates {
		if t.Match == nil {
			continue
		}
		if vars, ok := t.Match(uri); ok {
			return t, vars, true
		}
	}
	return nil, nil, false
}

// template finds a template by its URI template (completion references).
func (set *resourceSet) template(uriTemplate string) *Resource {
	for _, t := range set.templates {
		if t.URITemplate == uriTemplate {
			return t
		}
	}
	return nil
}

// addResources registers the configured resources and templates on s. allowed
// (ToolAllowed) is asked about each resource by name: refused resources are
// hidden from the lists (hidePrimitives) and read as not found.
func addResources(s *sdk.Server, set *resourceSet, allowed func(context.Context, string) error, logger *slog.Logger) {
	for _, r := range set.all {
		h := resourceHandler(r, set, allowed, logger)
		if r.URITemplate != "" {
			s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: r.URITemplate, Name: r.Name, Title: r.Title,
				Description: r.Description, MIMEType: r.MIMEType}, h)
			continue
		}
		s.AddResource(&sdk.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}, h)
	}
}

func resourceHandler(r *Resource, set *resourceSet, allowed func(context.Context, string) error, logger *slog.Logger) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		uri := req.Params.URI
		if allowed != nil {
			if err := allowed(withCallerToken(ctx, req), r.Name); err != nil {
				logger.Info("mcp resource refused", "uri", uri, "reason", err)
				return nil, sdk.ResourceNotFoundError(uri)
			}
		}
		var vars map[string]string
		if r.URITemplate != "" {
			got, _, ok := set.lookup(uri)
			if !ok || got != r {
				return nil, sdk.ResourceNotFoundError(uri)
			}
			vars, _ = r.Match(uri)
		}
		c, err := r.Read(ctx, uri, vars)
		// MCP 2026-07-28: a resource whose workflow asks the client is answered
		// with the questions (inputrequired.go).
		if pending, state, asked, ierr := finishInputRequest(ctx); asked {
			if ierr != nil {
				return nil, ierr
			}
			return &sdk.ReadResourceResult{InputRequests: pending, RequestState: state}, nil
		}
		if errors.Is(err, ErrResourceNotFound) {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		if err != nil {
			logger.Warn("mcp resource read failed", "uri", uri, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("reading %s failed", uri)}
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{contentsOf(uri, r, c)}}, nil
	}
}

// contentsOf is c as the protocol carries it. Text and blob fields are omitted
// when empty, so an empty text stays a text (the go-sdk drops "").
func contentsOf(uri string, r *Resource, c *ResourceContent) *sdk.ResourceContents {
	mime := c.MIMEType
	if mime == "" {
		mime = r.MIMEType
	}
	rc := &sdk.ResourceContents{URI: uri, MIMEType: mime}
	if c.IsBlob {
		rc.Blob = c.Blob
		if rc.Blob == nil {
			rc.Blob = []byte{}
		}
	} else {
		rc.Text = c.Text
	}
	return rc
}

// ResourceInfo describes a resource or template of a server, for listings.
type ResourceInfo struct {
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uri_template,omitempty"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
}

func resourceInfos(rs []*Resource) []ResourceInfo {
	out := make([]ResourceInfo, 0, len(rs))
	for _, r := range rs {
		if r == nil {
			continue
		}
		out = append(out, ResourceInfo{URI: r.URI, URITemplate: r.URITemplate, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType})
	}
	return out
}
