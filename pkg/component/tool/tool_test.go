package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/component/componenttest"
	"github.com/arvenza/helix/pkg/component/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tool:// hands exchanges over in process like direct://; without an engine context
// there is no tool definition to validate against, so the suite sees the plain
// hand-over.
func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{
			Producer: true, Consumer: true, RequestReply: true, Headers: true,
			PassThrough: true, ProducerCancel: true, ConsumerCancel: true, ConcurrentConsumer: true,
		},
		Setup: func(t *testing.T) *componenttest.Fixture {
			comp := tool.NewComponent(nil)
			const u = "tool://conformance"
			return &componenttest.Fixture{
				Component: comp,
				URI:       u,
				Listen: func() <-chan componenttest.Message {
					ch := make(chan componenttest.Message, 256)
					cons, err := endpoint(t, comp, u).CreateConsumer(component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
						ch <- toMessage(ex)
						body := exchange.Stringify(ex.In().Body())
						if body == componenttest.BlockBody {
							<-ctx.Done()
							return ctx.Err()
						}
						ex.In().SetBody(componenttest.ReplyPrefix + body)
						ex.In().SetHeader(componenttest.ReplyHeader, "yes")
						return nil
					}))
					if err != nil {
						t.Fatal(err)
					}
					if err := cons.Start(context.Background()); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = cons.Stop(context.Background()) })
					return ch
				},
				Send: func(ctx context.Context, m componenttest.Message) (componenttest.Message, error) {
					p, err := endpoint(t, comp, u).CreateProducer()
					if err != nil {
						return componenttest.Message{}, err
					}
					ex := exchange.NewWithBody(exchange.InOut, m.Body)
					for k, v := range m.Headers {
						ex.In().SetHeader(k, v)
					}
					if err := p.Process(ctx, ex); err != nil {
						return componenttest.Message{}, err
					}
					return toMessage(ex), nil
				},
			}
		},
	})
}

// As a target inside an engine, tool:// validates and defaults the arguments before
// the tool runs, the way an MCP call does.
func TestTargetValidatesInput(t *testing.T) {
	hc := engine.NewContext("t")
	hc.AddComponent("tool", tool.NewComponent(hc))
	_ = hc.AddWorkflow(&engine.Workflow{
		ID: "shout", FromURI: "tool://shout", Kind: engine.KindTool,
		ValidateInput: func(args map[string]any) (map[string]any, error) {
			if _, ok := args["text"].(string); !ok {
				return nil, errors.New(`field "text" is required`)
			}
			if _, ok := args["suffix"]; !ok {
				args["suffix"] = "!"
			}
			return args, nil
		},
		Processors: []engine.Processor{engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			m := ex.In().Body().(map[string]any)
			ex.In().SetBody(strings.ToUpper(m["text"].(string)) + m["suffix"].(string))
			return nil
		})},
	})
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer hc.Stop(ctx)

	ex := exchange.NewWithBody(exchange.InOut, `{"text":"hi"}`)
	if err := hc.Send(ctx, "tool://shout", ex); err != nil {
		t.Fatal(err)
	}
	if ex.In().Body() != "HI!" {
		t.Fatalf("body = %v", ex.In().Body())
	}
	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{"other": 1}, `field "text" is required`},
		{"not json", "must be a JSON object"},
	} {
		err := hc.Send(ctx, "tool://shout", exchange.NewWithBody(exchange.InOut, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("body %v: got %v, want %q", c.body, err, c.want)
		}
	}
	err := hc.Send(ctx, "tool://missing", exchange.New(exchange.InOut))
	if err == nil || !strings.Contains(err.Error(), "no tool with this id") {
		t.Errorf("missing tool: %v", err)
	}
}

func endpoint(t *testing.T, c component.Component, raw string) component.Endpoint {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func toMessage(ex *exchange.Exchange) componenttest.Message {
	m := componenttest.Message{Body: exchange.Stringify(ex.In().Body()), Headers: map[string]string{}}
	for k, v := range ex.In().Headers() {
		m.Headers[k] = exchange.Stringify(v)
	}
	return m
}
