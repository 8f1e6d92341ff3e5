package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
)

func TestLimitCompletion(t *testing.T) {
	t.Parallel()
	many := make([]string, 150)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, tc := range []struct {
		name         string
		in           Completion
		n, total     int
		hasMore      bool
		valuesNotNil bool
	}{
		{"none", Completion{}, 0, 0, false, true},
		{"few", Completion{Values: []string{"a", "b"}}, 2, 2, false, true},
		{"capped", Completion{Values: many}, MaxCompletionValues, 150, true, true},
		{"total given", Completion{Values: []string{"a"}, Total: 40}, 1, 40, true, true},
		{"has more given", Completion{Values: []string{"a"}, HasMore: true}, 1, 1, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := limitCompletion(tc.in)
			if len(got.Values) != tc.n || got.Total != tc.total || got.HasMore != tc.hasMore || got.Values == nil {
				t.Fatalf("got %d values, total %d, hasMore %v (nil %v)", len(got.Values), got.Total, got.HasMore, got.Values == nil)
			}
		})
	}
}

// Every template config accepts must be one the go-sdk accepts: AddResourceTemplate
// panics on the others, which would crash the server at start.
func TestAcceptedTemplatesSuitTheSDK(t *testing.T) {
	t.Parallel()
	for _, tmpl := range []string{
		"app://orders/{id}", "app://x/{+path}", "test://template/{id}/data", "app://a/{a}/{b}?q=1",
		"app://x/%20/{id}", "app://x/{id}.json", "urn:x:{id}", "app://x/~{user_name}",
	} {
		if _, err := config.ParseURITemplate(tmpl); err != nil {
			t.Errorf("%s: %v", tmpl, err)
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: accepted by config, refused by the go-sdk: %v", tmpl, r)
				}
			}()
			sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil).AddResourceTemplate(
				&sdk.ResourceTemplate{URITemplate: tmpl, Name: "t"}, func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) { return nil, nil })
		}()
	}
	for _, bad := range []string{"app://x/{id", "app://x/id}", "app://x/{?q}", "app://x/{id*}", "app://x/{a,b}", "orders/{id}",
		"app://x/'{id}", "app://x/%zz/{id}", "app://x/{id}/{id}", "app://x"} {
		if _, err := config.ParseURITemplate(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestPrimitivesInMemory(t *testing.T) {
	t.Parallel()
	tmpl, err := config.ParseURITemplate("app://orders/{id}")
	if err != nil {
		t.Fatal(err)
	}
	order := &Resource{URITemplate: tmpl.Raw, Name: "order", MIMEType: "application/json", Match: tmpl.Match,
		Read: func(_ context.Context, uri string, vars map[string]string) (*ResourceContent, error) {
			if vars["id"] == "0" {
				return nil, fmt.Errorf("%w: no order 0", ErrResourceNotFound)
			}
			return &ResourceContent{Text: `{"id":"` + vars["id"] + `"}`}, nil
		},
		Complete: StaticCompletions(map[string][]string{"id": {"10", "11", "20"}}),
	}
	hidden := &Resource{URI: "app://secret", Name: "secret",
		Read: func(context.Context, string, map[string]string) (*ResourceContent, error) {
			return &ResourceContent{Text: "s"}, nil
		}}
	prompt := &Prompt{Name: "p", Description: "d", Arguments: []PromptArgument{{Name: "a", Required: true}, {Name: "b", Required: true}},
		Get: func(_ context.Context, args map[string]string) ([]*sdk.PromptMessage, error) {
			return []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: args["a"] + args["b"]}}}, nil
		}}
	allowed := func(_ context.Context, name string) error {
		if name == "secret" {
			return errors.New("blocked")
		}
		return nil
	}
	cs := connectInMemory(t, newTestContext(t), Options{Resources: []*Resource{order, hidden}, Prompts: []*Prompt{prompt}, ToolAllowed: allowed})
	ctx := testCtx(t)

	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lr.Resources {
		if r.URI == "app://secret" {
			t.Fatal("a refused resource is listed")
		}
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://secret"}); err == nil {
		t.Fatal("a refused resource was read")
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://orders/7"})
	if err != nil || res.Contents[0].Text != `{"id":"7"}` || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("read: %v %+v", err, res)
	}
	_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://orders/0"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("read of a missing order: %v", err)
	}
	_, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "p"})
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "missing required arguments a, b") {
		t.Fatalf("missing arguments: %v", err)
	}
	gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "p", Arguments: map[string]string{"a": "x", "b": "y"}})
	if err != nil || gp.Messages[0].Content.(*sdk.TextContent).Text != "xy" || gp.Description != "d" {
		t.Fatalf("get: %v %+v", err, gp)
	}
	cr, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "app://orders/{id}"},
		Argument: sdk.CompleteParamsArgument{Name: "id", Value: "1"}})
	if err != nil || strings.Join(cr.Completion.Values, ",") != "10,11" {
		t.Fatalf("complete: %v %+v", err, cr)
	}
	cr, err = cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "p"},
		Argument: sdk.CompleteParamsArgument{Name: "a", Value: ""}})
	if err != nil || cr.Completion.Values == nil || len(cr.Completion.Values) != 0 {
		t.Fatalf("complete without completions: %v %+v", err, cr)
	}
	if _, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "nope"},
		Argument: sdk.CompleteParamsArgument{Name: "a"}}); err == nil {
		t.Fatal("completion of an unknown prompt succeeded")
	}
	// Subscriptions of refused resources are tested over HTTP (pkg/app): this
	// client speaks the 2026-07-28 protocol, where Subscribe does not wait for the
	// server's answer.
}
