package app

import (
	"strings"

	"go.yaml.in/yaml/v3"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/uri"
)

// mcpTargetAuth handles the auth: block of a target step whose URI is mcp:// (spec §4.7):
//
//   - target:
//     uri: mcp://tools.internal:3100/search
//     auth: {type: bearer, token: "${env:MCP_TOKEN}"}
//
// It parses the block (resolving ${env:…}) and registers it with the context's mcp://
// component, which applies it when the engine creates the endpoint. Errors are recorded
// in d at the auth: node. The app installs it in its build context
// (step.BuildContext.TargetAuth) for the mcp scheme.
func mcpTargetAuth(bc *step.BuildContext, targetURI string, node *yaml.Node, path string, d *config.Decoder) {
	if uri.HasPlaceholders(targetURI) {
		d.Errorf(node, path, "auth needs a fixed mcp:// URI: with ${…} placeholders in the URI every resolved URI would be an endpoint of its own, without this auth")
		return
	}
	m, ok := d.Value(node, path).(map[string]any)
	if !ok {
		d.Errorf(node, path, "auth must be a mapping, such as {type: bearer, token: \"${env:MCP_TOKEN}\"}")
		return
	}
	auth, err := mcpclient.ParseAuth(m)
	if err != nil {
		// The path already ends in .auth; drop ParseAuth's own "auth: " prefix.
		d.Errorf(node, path, "%s", strings.TrimPrefix(err.Error(), "auth: "))
		return
	}
	u, err := uri.Parse(targetURI)
	if err != nil {
		return // the target step reports a bad URI itself
	}
	comp, err := mcpclient.ComponentOf(bc.HC)
	if err != nil {
		d.Errorf(node, path, "%v", err)
		return
	}
	if err := comp.SetAuth(u, auth); err != nil {
		d.Errorf(node, path, "%v", err)
	}
}
