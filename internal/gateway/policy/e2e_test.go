package policy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// headers adds fixed headers to every request of a go-sdk client.
type headers struct {
	base http.RoundTripper
	h    http.Header
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

// Two real go-sdk clients, alice's and bob's API keys, through the security
// stack and a go-sdk server whose middleware applies a Guard the way the
// gateway does (Visible on tools/list; Before and After around tools/call):
// the principals the stack names reach the Guard in the handlers' context.
func TestGuardBehindTheSecurityStack(t *testing.T) {
	t.Parallel()
	stack, err := security.New(security.Config{ServerID: "gw", APIKeys: []string{"alice-key", "bob-key"},
		APIKeyPrincipals: []security.KeyPrincipal{{Name: "alice", Roles: []string{"support"}}, {Name: "bob"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()
	g := mustGuard(t, []config.PolicyConfig{
		{Tools: []string{"github.*"}, Allow: &config.PrincipalMatch{Roles: []string{"support"}},
			Result: `result = redact(result, r"\b\d{3}-\d{2}-\d{4}\b")`},
	}, Options{})

	srv := mcp.NewServer(&mcp.Implementation{Name: "gw", Version: "1"}, nil)
	for _, name := range []string{"github.search", "echo"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "customer 123-45-6789"}}}, nil, nil
		})
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := PrincipalFromContext(ctx)
			switch method {
			case "tools/list":
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				lr := res.(*mcp.ListToolsResult)
				lr.Tools = slices.DeleteFunc(lr.Tools, func(tl *mcp.Tool) bool { return !g.Visible(ctx, p, gateway.KindTool, tl.Name) })
				return lr, nil
			case "tools/call":
				params := req.(*mcp.CallToolRequest).Params
				c := &gateway.Call{Principal: p, Method: method, Kind: gateway.KindTool, Name: params.Name, Arguments: params.Arguments}
				if err := g.Before(ctx, c); err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				res, err := next(ctx, method, req)
				if err != nil || !g.WantsResult(c) {
					return res, err
				}
				raw, _ := json.Marshal(res)
				out, err := g.After(ctx, c, raw)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				var masked mcp.CallToolResult
				if err := json.Unmarshal(out, &masked); err != nil {
					return nil, err
				}
				return &masked, nil
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(stack.Middleware(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(ts.Close) // after the sessions' cleanups: their event streams hold connections

	connect := func(key string) *mcp.ClientSession {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		hc := &http.Client{Transport: headers{base: tr, h: http.Header{"X-Api-Key": {key}}}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	ctx := context.Background()
	for _, tc := range []struct {
		key   string
		tools []string
		text  string
	}{
		{"alice-key", []string{"echo", "github.search"}, "customer ***"},
		{"bob-key", []string{"echo"}, `unknown tool "github.search"`},
	} {
		cs := connect(tc.key)
		lr, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range lr.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.tools) {
			t.Errorf("%s lists %v, want %v", tc.key, names, tc.tools)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "github.search", Arguments: map[string]any{"q": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; text != tc.text {
			t.Errorf("%s's call answered %q, want %q", tc.key, text, tc.text)
		}
	}
}
