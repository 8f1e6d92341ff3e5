package step

import (
	"context"
	"fmt"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name: "roots",
		Description: "Asks the MCP client that called the workflow for its roots (roots/list): the directories or other URIs it lets the server work in. " +
			"The list, [{uri, name}, …], becomes the body, or the variable named by into:. Works only in workflows called as MCP tools by a client that supports roots " +
			"(asked as elicit: asks, by a request or, on MCP 2026-07-28, an input request). `roots: files` is short for `roots: {into: files}`; `roots: {}` puts the list into the body.",
		Shape: config.Shape{Type: config.TypeObject, What: "a roots step", Short: "into", Keys: []config.Key{
			questionIDKey(),
			askTimeoutKey(),
			askIntoKey("the roots", "the roots become"),
		}},
		Build: buildRoots,
	})
}

// rootsStep asks the calling MCP client for its roots:
//
//	steps:
//	  - roots: {into: roots}
type rootsStep struct {
	name string
	askSettings
}

var _ ask.Asker = (*rootsStep)(nil)

func buildRoots(_ *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &rootsStep{name: Name(s)}
	st.askSettings = decodeAskSettings(d, v, st.name, "roots")
	return st, d.Err()
}

func (r *rootsStep) Name() string     { return r.name }
func (r *rootsStep) AsksClient() bool { return true }

func (r *rootsStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	c := ask.FromContext(ctx)
	if c == nil {
		return fmt.Errorf("roots: %w", ask.ErrNoClient)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	roots, err := c.Roots(ctx, &ask.RootsQuestion{ID: r.id})
	if err != nil {
		return fmt.Errorf("roots: %w", err)
	}
	// Plain values (maps and lists), as any other step's JSON-like body.
	list := make([]any, len(roots))
	for i, root := range roots {
		m := map[string]any{"uri": root.URI}
		if root.Name != "" {
			m["name"] = root.Name
		}
		list[i] = m
	}
	r.put(ex, list)
	return nil
}
