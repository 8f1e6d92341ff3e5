package step

import (
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/uri"
)

func init() {
	shape := config.Shape{Type: config.TypeObject, What: "a target", Short: "uri", Keys: []config.Key{
		{Name: "uri", Required: true, Shape: config.Shape{Type: config.TypeURI,
			Description: "The endpoint to send the exchange to; ${…} placeholders are resolved per exchange."}},
		{Name: "parameters", Shape: config.Shape{Type: config.TypeMap, What: "parameters",
			Values:      &config.Shape{Type: config.TypeString},
			Description: "Endpoint options added to the URI's query (values are URL-encoded; ${…} placeholders are kept)."}},
		{Name: "auth", Shape: config.Shape{Type: config.TypeAny,
			Description: "Authentication of the call, on schemes that support it (mcp://): {type: bearer, token: …}, api-key, oauth2 or mtls."}},
	}}
	desc := "Sends the exchange to an endpoint; with InOut endpoints the reply becomes the body. `target: URI` is short for `target: {uri: URI}`."
	Define(Kind{Name: "target", Description: desc, Shape: shape, Build: buildTarget})
	Define(Kind{Name: "to", Description: "Camel's name for target. " + desc, Shape: shape, Build: buildTarget})
}

// TargetAuthHandler configures authentication for the endpoint of a target step
// that has an `auth:` block (spec §4.7). It decodes auth with d (recording errors
// there) and attaches the result to whatever serves targetURI in bc.HC — for mcp://,
// the client component. It must not open connections: building is side-effect free.
// Handlers are installed per build in [BuildContext.TargetAuth].
type TargetAuthHandler func(bc *BuildContext, targetURI string, auth *yaml.Node, path string, d *config.Decoder)

// targetAuthHandler returns bc's handler of auth: blocks on targets of scheme, and
// the schemes that have one ("mcp://", sorted) for the error when there is none.
func (bc *BuildContext) targetAuthHandler(scheme string) (TargetAuthHandler, []string) {
	schemes := make([]string, 0, len(bc.TargetAuth))
	for s := range bc.TargetAuth {
		schemes = append(schemes, s+"://")
	}
	sort.Strings(schemes)
	return bc.TargetAuth[scheme], schemes
}

// buildTarget builds `target:` (and `to:`), written as a URI or as a mapping:
//
//	steps:
//	  - target: direct://next
//	  - target:
//	      uri: postgres://db:5432/orders?operation=query
//	      parameters:
//	        query: "SELECT * FROM orders WHERE id = :orderId"
//	      auth: {type: bearer, token: "${env:MCP_TOKEN}"}
//
// parameters become endpoint options, i.e. URI query parameters (values are
// URL-encoded; ${…} placeholders inside them are kept and resolved per exchange), the
// way Camel endpoint options work: one mechanism, and the component documents them.
func buildTarget(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	raw, uriNode := v.String("uri"), v.NodeOf("uri")
	if uriNode == nil {
		uriNode = s.Node
	}
	authNode, authPath := v.NodeOf("auth"), v.PathOf("auth")
	params := v.Pairs("parameters")
	if len(params) > 0 {
		raw = config.WithParameters(raw, params)
	}
	CheckPlaceholders(d, uriNode, s.Path, raw)
	if authNode != nil {
		if u, err := uri.Parse(raw); err == nil {
			h, supported := bc.targetAuthHandler(u.Scheme)
			if h == nil {
				e := d.Errorf(authNode, authPath, "auth: is not supported on %s:// targets", u.Scheme)
				if len(supported) > 0 {
					e.Hint = "auth applies to " + strings.Join(supported, ", ") + " targets"
				}
			} else {
				h(bc, raw, authNode, authPath, d)
			}
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	if !bc.CheckEndpoint(d.Pos(uriNode), s.Path, raw, false) {
		return nil, nil
	}
	return keyedTarget{engine.NewTarget(bc.HC, raw).WithName(Name(s)), s.Pos.String()}, nil // effectkey.go
}
