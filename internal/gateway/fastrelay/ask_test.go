package fastrelay

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAskSessionAsksTheCaller: the requests an upstream sends while a call
// runs reach the caller's session (roots, elicitation) and come back as JSON;
// other methods are refused with method-not-found.
func TestAskSessionAsksTheCaller(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "gw", Version: "1"}, nil)
	// The tool asks as the relay does for a request the upstream sent.
	sdk.AddTool(srv, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params,omitempty"`
	}) (*sdk.CallToolResult, any, error) {
		var params json.RawMessage
		if in.Params != nil {
			params, _ = json.Marshal(in.Params)
		}
		res, err := AskSession(req.Session)(ctx, in.Method, params)
		if err != nil {
			return nil, nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(res)}}}, nil, nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	c := sdk.NewClient(&sdk.Implementation{Name: "caller", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": req.Params.Message + "!"}}, nil
		},
	})
	//lint:ignore SA1019 MCP roots are what is relayed
	c.AddRoots(&sdk.Root{URI: "file:///caller/project"})
	cs, err := c.Connect(testCtx(t), &sdk.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	ask := func(method, params string) (string, bool) {
		if method == "tasks/list" {
			// The refusal is a JSON-RPC error, which the go-sdk passes on as one.
			_, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"method": method}})
			if err == nil {
				return "", false
			}
			return err.Error(), true
		}
		args := map[string]any{"method": method}
		if params != "" {
			args["params"] = json.RawMessage(params)
		}
		res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "ask", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*sdk.TextContent).Text, res.IsError
	}
	if got, isErr := ask("roots/list", ""); isErr || !strings.Contains(got, `"uri":"file:///caller/project"`) {
		t.Errorf("roots/list: %v %s", isErr, got)
	}
	if got, isErr := ask("elicitation/create", `{"message":"why","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}}}`); isErr || got != `{"action":"accept","content":{"answer":"why!"}}` {
		t.Errorf("elicitation/create: %v %s", isErr, got)
	}
	if got, isErr := ask("tasks/list", ""); !isErr || !strings.Contains(got, "method not found") {
		t.Errorf("tasks/list: %v %s", isErr, got)
	}
	var rpcErr *jsonrpc.Error
	if _, err := AskSession(nil)(context.Background(), "roots/list", nil); !errorsAs(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("a sessionless call: %v", err)
	}
}

func errorsAs(err error, target **jsonrpc.Error) bool {
	e, ok := err.(*jsonrpc.Error)
	*target = e
	return ok
}
