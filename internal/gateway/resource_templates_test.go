package gateway_test

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// A URI built from an upstream's resource template (memo://items/{id}) is
// subscribed to at that upstream, and its updates reach the client; a URI
// that neither a listing nor a template names is still refused.
func TestGatewaySubscribesToTemplatedResources(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	updated := make(chan string, 4)
	cs := connect(t, comp, "/mcp", "2025-11-25", &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	})
	ctx := testCtx(t)
	const uri = "memo://items/7"
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	if n := a.subs.Load(); n != 1 {
		t.Errorf("the upstream got %d subscriptions, want 1", n)
	}
	if err := a.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("updated %s, want %s", got, uri)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated relayed")
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Errorf("unsubscribe %s: %v", uri, err)
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "memo://nowhere/7"}); err == nil {
		t.Error("a URI no upstream names was subscribed to")
	}
}
