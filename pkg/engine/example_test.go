package engine_test

import (
	"context"
	"fmt"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// The spec's §3.3 Go program without its MCP lines: a workflow built in Go and
// called through direct://.
func Example() {
	h := engine.NewContext("mcp-demo")

	h.AddWorkflow(&engine.Workflow{
		ID:          "greet",
		Description: "Greet a person by name",
		FromURI:     "direct://greet",
		Processors: []engine.Processor{
			engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
				body, _ := ex.In().Body().(map[string]any)
				name, _ := body["name"].(string)
				if name == "" {
					name = "World"
				}
				ex.In().SetBody("Hello, " + name + "!")
				return nil
			}),
		},
	})

	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer h.Stop(ctx)

	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"name": "Ada"})
	if err := h.Send(ctx, "direct://greet", ex); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ex.In().Body())
	// Output: Hello, Ada!
}
