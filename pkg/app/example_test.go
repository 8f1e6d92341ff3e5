package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// An embedding program: load a helix.yaml from memory, build it, start it, call a
// workflow from Go and stop. Options.ManagementAddr "127.0.0.1:0" keeps the
// management endpoints on a free loopback port.
func ExampleBuild() {
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: greet
    trigger:
      uri: direct://greet
    steps:
      - transform:
          starlang: |
            "Hello, " ++ payload.get("name", "World") ++ "!"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := app.Build(cfg, app.Options{
		Logger:         slog.New(slog.DiscardHandler),
		ManagementAddr: "127.0.0.1:0",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer a.Stop(ctx)

	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"name": "Ada"})
	if err := a.Context().Send(ctx, "direct://greet", ex); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ex.In().Body())
	// Output: Hello, Ada!
}

// Build reports every problem of a configuration at once as config.Errors, each
// with its position in the file, the key it is about, a message and a hint saying
// what to do; nothing has started.
func ExampleBuild_errors() {
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: broken
    trigger:
      uri: nope://x
    steps:
      - log:
          message: hi
`))
	if err == nil {
		_, err = app.Build(cfg, app.Options{Logger: slog.New(slog.DiscardHandler)})
	}
	var problems config.Errors
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Println(p.Pos, p.Path)
		}
	}
	// Output: helix.yaml:5:12 workflows[0].trigger
}

// The MCP guide's integration test setup (§11.2): the MCP server declared in Go on a
// random port, the workflows loaded from YAML, then a real MCP client over HTTP.
func ExampleApp_MCPServerAddr() {
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: calculate-tax
    description: Calculate tax for a given amount and rate
    trigger:
      uri: direct://calculate-tax
    steps:
      - transform:
          starlang: |
            str(float(payload.get("amount", 0)) * float(payload.get("rate", 0.1)))
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.Helix.MCP.Servers = []config.MCPServerConfig{{
		Enabled:   true,
		Transport: "http",
		Addr:      "127.0.0.1:0", // random port
		Name:      "test",
	}}
	a, err := app.Build(cfg, app.Options{Logger: slog.New(slog.DiscardHandler), ManagementAddr: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer a.Stop(ctx)

	// The actual port: a server is known by its id, which defaults to its name.
	url := "http://" + a.MCPServerAddr("test").String() + "/mcp"
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{
		Name:      "calculate_tax",
		Arguments: map[string]any{"amount": 200, "rate": 0.25},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.IsError, res.Content[0].(*sdk.TextContent).Text)
	// Output: false 50.0
}

// A program's own component (see the example of package component) used from YAML:
// Options.Components registers it under its scheme beside Helix's own.
func ExampleOptions_components() {
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: shout
    trigger:
      uri: direct://shout
    steps:
      - target: reverse://text
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := app.Build(cfg, app.Options{
		Logger:         slog.New(slog.DiscardHandler),
		ManagementAddr: "127.0.0.1:0",
		Components:     map[string]component.Component{"reverse": reverseComponent{}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer a.Stop(ctx)

	ex := exchange.NewWithBody(exchange.InOut, "stressed")
	if err := a.Context().Send(ctx, "direct://shout", ex); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ex.In().Body())
	// Output: desserts
}

// reverseComponent: reverse:// targets reverse the body's text.
type reverseComponent struct{}

func (reverseComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	return reverseEndpoint{raw: u.String()}, nil
}

type reverseEndpoint struct{ raw string }

func (e reverseEndpoint) URI() string { return e.raw }

func (reverseEndpoint) CreateProducer() (component.Producer, error) {
	return reverseProducer{}, nil
}

func (reverseEndpoint) CreateConsumer(component.Processor) (component.Consumer, error) {
	return nil, component.ErrProducerOnly
}

type reverseProducer struct{ component.NopService }

func (reverseProducer) Process(_ context.Context, ex *exchange.Exchange) error {
	r := []rune(exchange.Stringify(ex.In().Body()))
	slices.Reverse(r)
	ex.In().SetBody(string(r))
	return nil
}
