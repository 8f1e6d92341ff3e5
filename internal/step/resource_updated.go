package step

import (
	"context"
	"errors"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func init() {
	Define(Kind{
		Name: "resource-updated",
		Description: "Tells the MCP clients subscribed to a resource that it changed (notifications/resources/updated on every running MCP server of the application), " +
			"with ${…} placeholders resolved per exchange. The exchange goes on unchanged. `resource-updated: \"app://orders/${body.id}\"` is short for `resource-updated: {uri: …}`.",
		Shape: config.Shape{Type: config.TypeObject, What: "a resource-updated step", Short: "uri", Keys: []config.Key{
			{Name: "uri", Required: true, Shape: config.Shape{Type: config.TypeString,
				Description: "The URI of the resource that changed; ${body.x}, ${header.X} placeholders are resolved."}},
		}},
		Build: buildResourceUpdated,
	})
}

// resourceNotifier is what the mcp-server component offers for this step.
type resourceNotifier interface {
	ResourceUpdated(ctx context.Context, uri string)
}

type resourceUpdatedStep struct {
	hc   *engine.Context
	name string
	uri  string
}

func buildResourceUpdated(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &resourceUpdatedStep{hc: bc.HC, name: Name(s), uri: v.String("uri")}
	if v.Has("uri") && strings.TrimSpace(st.uri) == "" {
		d.Errorf(v.NodeOf("uri"), v.PathOf("uri"), "resource-updated needs the URI of the resource that changed")
	}
	CheckPlaceholders(d, v.Node, s.Path, st.uri)
	return st, d.Err()
}

func (r *resourceUpdatedStep) Name() string { return r.name }

func (r *resourceUpdatedStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	u, err := uri.Expand(r.uri, ex)
	if err != nil {
		return err
	}
	if u == "" {
		return errors.New("resource-updated: the URI is empty")
	}
	if c, ok := r.hc.Component("mcp-server"); ok {
		if n, ok := c.(resourceNotifier); ok {
			n.ResourceUpdated(ctx, u)
		}
	}
	return nil
}
