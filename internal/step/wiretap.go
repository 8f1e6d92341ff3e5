package step

import (
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
)

func init() {
	Define(Kind{
		Name:        "wiretap",
		Description: "Sends a copy of the exchange to an endpoint in the background and goes on at once (Camel's Wire Tap). `wiretap: URI` is short for `wiretap: {uri: URI}`.",
		Shape: config.Shape{Type: config.TypeObject, What: "a wiretap", Short: "uri", Keys: []config.Key{
			{Name: "uri", Required: true, Shape: config.Shape{Type: config.TypeURI, Description: "The endpoint that receives the copies."}},
			{Name: "max_in_flight", Shape: config.Shape{Type: config.TypeInt,
				Description: "At most this many copies are on their way at once; further copies are dropped with a warning."}},
		}},
		Build: buildWiretap,
	})
}

// buildWiretap builds `wiretap:` (spec §12.2), a URI or a mapping:
//
//	steps:
//	  - wiretap: kafka://deployments?topic=audit-log
//	  - wiretap: {uri: "log://audit", max_in_flight: 100}
//
// The copy is sent in the background; see pattern.Wiretap and docs/patterns.md.
func buildWiretap(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	raw, uriNode := v.String("uri"), v.NodeOf("uri")
	if uriNode == nil {
		uriNode = s.Node
	}
	opts := pattern.WiretapOptions{MaxInFlight: v.Int("max_in_flight")}
	if v.Has("max_in_flight") && opts.MaxInFlight < 1 {
		d.Errorf(v.NodeOf("max_in_flight"), v.PathOf("max_in_flight"), "max_in_flight must be at least 1, got %d", opts.MaxInFlight)
	}
	CheckPlaceholders(d, uriNode, s.Path, raw)
	if err := d.Err(); err != nil {
		return nil, err
	}
	if !bc.CheckEndpoint(d.Pos(uriNode), s.Path, raw, false) {
		return nil, nil
	}
	w, err := pattern.NewWiretap(bc.HC, raw, opts)
	if err != nil {
		return nil, err
	}
	return w.WithName(Name(s)), nil
}
