package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// rootsServer offers roots, a tool that lists the caller's roots, and keeps
// its sessions so that a test can ask for roots outside any call.
func rootsServer(sessions *sync.Map) func(*sdk.Server) {
	return func(srv *sdk.Server) {
		srv.AddTool(&sdk.Tool{Name: "roots", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			sessions.Store(req.Session, true)
			//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: rootURIs(res)}}}, nil
		})
	}
}

//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
func rootURIs(res *sdk.ListRootsResult) string {
	var uris []string
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	return strings.Join(uris, ",")
}

// rootsClient connects to the gateway as a client with roots (none: a client
// that declares no roots capability).
func rootsClient(t *testing.T, addr string, roots ...string) (*sdk.ClientSession, *sdk.Client) {
	t.Helper()
	var opts *sdk.ClientOptions
	if len(roots) == 0 {
		opts = &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, opts)
	for _, r := range roots {
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		c.AddRoots(&sdk.Root{URI: r})
	}
	cs, err := c.Connect(testCtx(t), &sdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, c
}

// An upstream's roots/list reaches the client whose call is in flight, and on
// a per-client session also outside a call; the upstream session declares
// roots only when its client did.
func TestGatewayRelaysRootsToTheClient(t *testing.T) {
	t.Parallel()
	var sessions sync.Map
	changed := make(chan *sdk.ServerSession, 10)
	srv := sdk.NewServer(&sdk.Implementation{Name: "a", Version: "1"}, &sdk.ServerOptions{
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		RootsListChangedHandler: func(_ context.Context, req *sdk.RootsListChangedRequest) { changed <- req.Session },
	})
	rootsServer(&sessions)(srv)
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: hs.URL, Transport: "http"}}})
	addr := comp.Addr("gw").String()
	ctx := testCtx(t)
	c1, client1 := rootsClient(t, addr, "file:///one", "file:///two")
	c2, _ := rootsClient(t, addr, "file:///other")
	for cs, want := range map[*sdk.ClientSession]string{c1: "file:///one,file:///two", c2: "file:///other"} {
		// With a progress token the call takes the decoding relay (the fast
		// relay passes the upstream's requests on by itself).
		params := &sdk.CallToolParams{Name: "a.roots"}
		params.SetProgressToken("p")
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); got != want || res.IsError {
			t.Errorf("roots seen by the upstream in a call = %q, want the caller's own %q", got, want)
		}
	}
	// Outside a call: each per-client upstream session asks its own client.
	var got []string
	sessions.Range(func(k, _ any) bool {
		ss := k.(*sdk.ServerSession)
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		if r := ss.InitializeParams().Capabilities.RootsV2; r == nil || !r.ListChanged {
			t.Errorf("upstream session declares roots %+v, want its client's (listChanged)", r)
		}
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		res, err := ss.ListRoots(ctx, nil)
		if err != nil {
			t.Fatalf("roots/list outside a call: %v", err)
		}
		got = append(got, rootURIs(res))
		return true
	})
	if len(got) != 2 || !(got[0] == "file:///other" || got[1] == "file:///other") {
		t.Errorf("roots outside a call = %q, want each client's own", got)
	}

	// A client's changed roots: its upstream session is told, and lists them anew.
	//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
	client1.AddRoots(&sdk.Root{URI: "file:///three"})
	select {
	case ss := <-changed:
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		res, err := ss.ListRoots(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := rootURIs(res); got != "file:///one,file:///three,file:///two" {
			t.Errorf("roots after the change = %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("notifications/roots/list_changed did not reach the upstream")
	}
	select {
	case <-changed:
		t.Error("the other client's upstream session was told of roots that are not its client's")
	default:
	}

	// A client without roots: the upstream session declares none.
	c3, _ := rootsClient(t, addr)
	sessions.Clear()
	res, err := c3.CallTool(ctx, &sdk.CallToolParams{Name: "a.roots"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "" || res.IsError {
		t.Errorf("roots of a client that has none = %q (error %v), want what the client answers: none", got, res.IsError)
	}
	sessions.Range(func(k, _ any) bool {
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		if r := k.(*sdk.ServerSession).InitializeParams().Capabilities.RootsV2; r != nil {
			t.Errorf("the upstream session of a client without roots declares roots %+v", r)
		}
		return true
	})
}
