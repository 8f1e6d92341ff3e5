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

// With per-client upstream sessions each client's subscription is held on
// its own upstream session (where the upstream tracks it and where its calls
// run), and a session that replaces a lost one subscribes again.
func TestGatewaySubscribesOnTheClientsOwnUpstreamSession(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, g := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	ctx := testCtx(t)
	c1 := connect(t, comp, "/mcp", "2025-11-25", nil)
	c2 := connect(t, comp, "/mcp", "2025-11-25", nil)
	for _, cs := range []*sdk.ClientSession{c1, c2} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "memo://a"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.subs.Load(); n != 2 {
		t.Fatalf("upstream subscriptions = %d, want one per client's session", n)
	}
	fresh, err := sdk.NewClient(&sdk.Implementation{Name: "x", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: a.url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	g.Reopened("a")(gateway.SessionKey{Downstream: c1.ID()}, fresh)
	if n := a.subs.Load(); n != 3 {
		t.Fatalf("upstream subscriptions after the reopen = %d, want 3", n)
	}
	if err := c2.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "memo://a"}); err != nil {
		t.Fatal(err)
	}
	g.Reopened("a")(gateway.SessionKey{Downstream: c2.ID()}, fresh)
	if n := a.subs.Load(); n != 3 {
		t.Fatalf("an unsubscribed session subscribed again after a reopen: %d subscriptions", n)
	}
}
