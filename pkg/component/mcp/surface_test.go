package mcp_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	helixmcp "github.com/arvenza/helix/pkg/component/mcp"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// The public server component offers what a program needs (register it, declare
// servers, find their address) and nothing of Helix's own wiring (catalogues,
// listings, shutdown hooks), which stays internal.
func TestServerComponentMethods(t *testing.T) {
	var got []string
	typ := reflect.TypeFor[*helixmcp.ServerComponent]()
	for m := range typ.Methods() {
		got = append(got, m.Name)
	}
	want := []string{"AddServer", "Addr", "CreateEndpoint", "Spec", "Start", "Stop"}
	if !slices.Equal(got, want) {
		t.Fatalf("methods of *ServerComponent = %v, want %v", got, want)
	}
}

// The public client component is a component and nothing more (Helix's agents set
// per-URI auth on the internal one).
func TestClientComponentMethods(t *testing.T) {
	var got []string
	for m := range reflect.TypeFor[*helixmcp.ClientComponent]().Methods() {
		got = append(got, m.Name)
	}
	if want := []string{"CreateEndpoint", "Spec", "Start", "Stop"}; !slices.Equal(got, want) {
		t.Fatalf("methods of *ClientComponent = %v, want %v", got, want)
	}
}

// A server declared in Go with AddServer (as helix.mcp.servers does) listens where
// Addr says and serves the context's workflows, with the overridden description.
func TestAddServer(t *testing.T) {
	ctx := testContext(t)
	hc := engine.NewContext("declared")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	if err := hc.AddWorkflow(&engine.Workflow{
		ID: "ping", FromURI: "direct://ping",
		Processors: []engine.Processor{engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody("pong")
			return nil
		})},
	}); err != nil {
		t.Fatal(err)
	}
	sc := helixmcp.NewServer(hc)
	hc.AddComponent(helixmcp.ServerScheme, sc)
	err := sc.AddServer(helixmcp.ServerOptions{
		ID: "api", Name: "declared", Addr: "127.0.0.1:0",
		Tools: map[string]helixmcp.ToolOverride{"ping": {Description: "Answers pong"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	if sc.Addr("nope") != nil {
		t.Fatal("Addr of an unknown id is not nil")
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + sc.Addr("api").String() + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Description != "Answers pong" {
		t.Fatalf("tools/list = %+v, %v; want ping described as Answers pong", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "ping", Arguments: map[string]any{}})
	if err != nil || res.IsError || contentText(t, res) != "pong" {
		t.Fatalf("ping = %+v, %v", res, err)
	}
}

// A mistake in the options is an error of AddServer, saying what is wrong.
func TestAddServerRefusesBadOptions(t *testing.T) {
	sc := helixmcp.NewServer(engine.NewContext("bad"))
	for _, opts := range []helixmcp.ServerOptions{
		{ID: "a", Transport: "carrier-pigeon"},
		{ID: "b", Addr: "no port"},
	} {
		if err := sc.AddServer(opts); err == nil {
			t.Errorf("AddServer(%+v) = nil, want an error", opts)
		}
	}
}

// A tool answering with an error fails the calling exchange with *ToolError.
func TestClientToolErrorIsFound(t *testing.T) {
	ctx := testContext(t)
	srv := engine.NewContext("failing")
	srv.SetLogger(slog.New(slog.DiscardHandler))
	sc := helixmcp.NewServer(srv)
	srv.AddComponent(helixmcp.ServerScheme, sc)
	_ = srv.AddWorkflow(&engine.Workflow{ID: "closed", FromURI: "direct://closed",
		Processors: []engine.Processor{engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			return errors.New("the warehouse is closed")
		})}})
	if err := sc.AddServer(helixmcp.ServerOptions{ID: "s", Addr: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	h := engine.NewContext("caller")
	h.SetLogger(slog.New(slog.DiscardHandler))
	h.AddComponent(helixmcp.ClientScheme, helixmcp.NewClient())
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{})
	err := h.Send(ctx, "mcp://"+sc.Addr("s").String()+"/closed?transport=http", ex)
	if err == nil {
		err = ex.Exception()
	}
	var te *helixmcp.ToolError
	if !errors.As(err, &te) || te.Tool != "closed" || !strings.Contains(te.Message, "the warehouse is closed") {
		t.Fatalf("error %v (%T), want a *ToolError of tool closed", err, err)
	}
}
