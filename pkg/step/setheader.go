package step

import (
	"context"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() { Register("set-header", buildSetHeader) }

// setHeader sets one header from a constant or a script:
//
//	steps:
//	  - set-header: {name: Authorization, constant: "Bearer ${env:API_TOKEN}"}
//	  - set-header: {name: HelixMcpToolName, starlang: 'header("X-Intent")'}
//
// A None value removes the header.
type setHeader struct {
	name   string
	header string
	val    valueSource
}

func buildSetHeader(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
	d := bc.Decoder(s)
	st := &setHeader{name: Name(s)}
	d.Mapping(s.Node, s.Path, "a set-header step", st.val.fields(bc, d, config.Fields{
		"name": func(v *yaml.Node, p string) {
			st.header = d.String(v, p)
			if strings.TrimSpace(st.header) == "" {
				d.Errorf(v, p, "the header name must not be empty")
			}
		},
	}), "name")
	st.val.check(d, s.Node, s.Path, "set-header", hasKey(s.Node, "starlang"))
	return st, d.Err()
}

func (h *setHeader) Name() string { return h.name }

func (h *setHeader) Process(ctx context.Context, ex *exchange.Exchange) error {
	v, _, err := h.val.eval(ctx, ex)
	if err != nil {
		return err
	}
	ex.In().SetHeader(h.header, v)
	return nil
}
