package interop

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPrefixedUpstreamThroughGateway: examples/gateway.yaml with
// UPSTREAM_PREFIX set serves every tool and prompt of the upstream under the
// prefix, and a call, a prompt and a completion by the prefixed name reach the
// upstream's own.
func TestPrefixedUpstreamThroughGateway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	const prefix = "everything."
	c := connectGo(t, &sdk.StreamableClientTransport{Endpoint: startGateway(t, startEverythingHTTP(t), prefix)}, era20251125)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := c.session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("no tools through the gateway")
	}
	for _, tl := range tools.Tools {
		if !strings.HasPrefix(tl.Name, prefix) {
			t.Errorf("tool %s is served without the prefix %s", tl.Name, prefix)
		}
	}
	res, err := c.session.CallTool(ctx, &sdk.CallToolParams{Name: prefix + "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "Echo: hi" {
		t.Errorf("%secho: %+v, %v", prefix, res, err)
	}
	if res, err := c.session.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err == nil && !res.IsError {
		t.Error("the upstream's own name echo is served beside the prefixed one")
	}
	prompts, err := c.session.ListPrompts(ctx, nil)
	if err != nil || !slices.ContainsFunc(prompts.Prompts, func(p *sdk.Prompt) bool { return p.Name == prefix+"args-prompt" }) {
		t.Fatalf("prompts/list: %+v, %v", prompts, err)
	}
	got, err := c.session.GetPrompt(ctx, &sdk.GetPromptParams{Name: prefix + "args-prompt", Arguments: map[string]string{"city": "Paris"}})
	if err != nil || !strings.Contains(got.Messages[0].Content.(*sdk.TextContent).Text, "Paris") {
		t.Errorf("%sargs-prompt: %+v, %v", prefix, got, err)
	}
	completion, err := c.session.Complete(ctx, &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/prompt", Name: prefix + "completable-prompt"},
		Argument: sdk.CompleteParamsArgument{Name: "department", Value: "S"},
	})
	if err != nil || !slices.Equal(completion.Completion.Values, []string{"Sales", "Support"}) {
		t.Errorf("completion of %scompletable-prompt: %+v, %v", prefix, completion, err)
	}
}
