package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	"github.com/arvenza/helix/internal/component/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tool:// hands exchanges over in process like direct://; without an engine context
// there is no tool definition to validate against, so the suite sees the plain
// hand-over.
func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.InProcessFeatures,
		Setup: func(t *testing.T) *componenttest.Fixture {
			return componenttest.InProcessFixture(t, tool.NewComponent(nil), "tool://conformance")
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
