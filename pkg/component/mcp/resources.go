package mcp

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
// they were added. It is read on each request so that states are current.
func WorkflowEntries(hc *engine.Context) []WorkflowEntry {
	wfs := hc.Workflows()
	out := make([]WorkflowEntry, 0, len(wfs))
	for _, wf := range wfs {
		out = append(out, WorkflowEntry{ID: wf.ID, FromURI: wf.FromURI, Description: wf.Description, State: hc.WorkflowState(wf.ID)})
	}
	return out
}

func addWorkflowResources(s *sdk.Server, hc *engine.Context) {
	for _, u := range []string{WorkflowsResourceURI, RoutesResourceURI} {
		name := "workflows"
		desc := "All workflows of this Helix context: id, trigger URI, description and state (Started/Stopped)."
		if u == RoutesResourceURI {
			name = "routes"
			desc = "Alias of " + WorkflowsResourceURI + "."
		}
		s.AddResource(&sdk.Resource{URI: u, Name: name, Description: desc, MIMEType: "application/json"},
			func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				data, err := json.MarshalIndent(WorkflowEntries(hc), "", "  ")
				if err != nil {
					return nil, err
				}
				return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
					URI: req.Params.URI, MIMEType: "application/json", Text: string(data),
				}}}, nil
			})
	}
}
