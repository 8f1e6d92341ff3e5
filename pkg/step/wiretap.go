package step

import (
	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/pattern"
)

func init() { Register("wiretap", buildWiretap) }

// buildWiretap builds `wiretap:` (spec §12.2), a URI or a mapping:
//
//	steps:
//	  - wiretap: kafka://deployments?topic=audit-log
//	  - wiretap: {uri: "log://audit", max-in-flight: 100}
//
// The copy is sent in the background; see pattern.Wiretap and docs/patterns.md.
func buildWiretap(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
	d := bc.Decoder(s)
	var raw string
	uriNode := s.Node
	var opts pattern.WiretapOptions
	if s.Node != nil && s.Node.Kind == yaml.MappingNode {
		d.Mapping(s.Node, s.Path, "a wiretap", config.Fields{
			"uri": func(v *yaml.Node, p string) { raw, uriNode = d.String(v, p), v },
			"max-in-flight": func(v *yaml.Node, p string) {
				if opts.MaxInFlight = d.Int(v, p); opts.MaxInFlight < 1 {
					d.Errorf(v, p, "max-in-flight must be at least 1, got %d", opts.MaxInFlight)
				}
			},
		}, "uri")
	} else {
		raw = d.String(s.Node, s.Path)
	}
	checkPlaceholders(d, uriNode, s.Path, raw)
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
