package mcp

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	helixstep "github.com/arvenza/helix/pkg/step"
	"github.com/arvenza/helix/pkg/uri"
)

func init() {
	helixstep.RegisterTargetAuth(ClientScheme, targetAuth)
}

// targetAuth handles the auth: block of a target step whose URI is mcp:// (spec §4.7):
//
//   - target:
//     uri: mcp://tools.internal:3100/search
//     auth: {type: bearer, token: "${env:MCP_TOKEN}"}
//
// It parses the block (resolving ${env:…}) and registers it with the context's mcp://
// component, which applies it when the engine creates the endpoint. Errors are recorded
// in d at the auth: node.
func targetAuth(bc *helixstep.BuildContext, targetURI string, node *yaml.Node, path string, d *config.Decoder) {
	if uri.HasPlaceholders(targetURI) {
		d.Errorf(node, path, "auth needs a fixed mcp:// URI: with ${…} placeholders in the URI every resolved URI would be an endpoint of its own, without this auth")
		return
	}
	m, ok := d.Value(node, path).(map[string]any)
	if !ok {
		d.Errorf(node, path, "auth must be a mapping, such as {type: bearer, token: \"${env:MCP_TOKEN}\"}")
		return
	}
	auth, err := ParseAuth(m)
	if err != nil {
		// The path already ends in .auth; drop ParseAuth's own "auth: " prefix.
		d.Errorf(node, path, "%s", strings.TrimPrefix(err.Error(), "auth: "))
		return
	}
	u, err := uri.Parse(targetURI)
	if err != nil {
		return // the target step reports a bad URI itself
	}
	comp, err := clientComponentOf(bc.HC)
	if err != nil {
		d.Errorf(node, path, "%v", err)
		return
	}
	if err := comp.SetAuth(u, auth); err != nil {
		d.Errorf(node, path, "%v", err)
	}
}

// clientComponentOf returns the context's mcp:// component, registering one when the
// context has none yet (an mcp:// target could not run without it anyway).
func clientComponentOf(hc *engine.Context) (*ClientComponent, error) {
	if comp, ok := hc.Component(ClientScheme); ok {
		cc, ok := comp.(*ClientComponent)
		if !ok {
			return nil, fmt.Errorf("auth: the mcp:// component of this context is a %T, not Helix's MCP client, so it cannot take an auth: block", comp)
		}
		return cc, nil
	}
	cc := NewClient()
	hc.AddComponent(ClientScheme, cc)
	return cc, nil
}
