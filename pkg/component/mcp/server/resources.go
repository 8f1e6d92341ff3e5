package server

import (
	"context"
	"encoding/json"

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
