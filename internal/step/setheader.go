package step

import (
	"context"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name:        "set-header",
		Description: "Sets one header from a constant or the value of a Starlang script; a None value removes the header.",
		Shape: config.Shape{Type: config.TypeObject, What: "a set-header step", Keys: append([]config.Key{
			{Name: "name", Required: true, Shape: config.Shape{Type: config.TypeString, Description: "The header name."}},
		}, valueKeys("header value")...)},
		Build: buildSetHeader,
	})
}

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

func buildSetHeader(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &setHeader{name: Name(s), header: v.String("name")}
	if v.Has("name") && strings.TrimSpace(st.header) == "" {
		d.Errorf(v.NodeOf("name"), v.PathOf("name"), "the header name must not be empty")
	}
	st.val.decode(bc, d, v, "set-header")
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
