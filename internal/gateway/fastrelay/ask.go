package fastrelay

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// AskSession is an Options.Ask that passes the upstream's requests to the
// client on to the downstream session s (its elicitation, sampling and roots),
// as the decoding relay does; a session of a client that did not declare the
// capability answers as the go-sdk does. Other methods are refused with
// method-not-found. nil s refuses everything (a sessionless call has nobody
// to ask).
func AskSession(s *sdk.ServerSession) func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if s == nil {
			return nil, notRelayed(method)
		}
		switch method {
		case "elicitation/create":
			return askWith(ctx, params, s.Elicit)
		case "sampling/createMessage":
			//lint:ignore SA1019 MCP sampling is what is relayed
			return askWith(ctx, params, s.CreateMessage)
		case "roots/list":
			//lint:ignore SA1019 MCP roots are what is relayed
			return askWith(ctx, params, s.ListRoots)
		}
		return nil, notRelayed(method)
	}
}

func notRelayed(method string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the gateway does not relay " + method + " on this call"}
}

// askWith decodes params as the go-sdk's P, asks, and encodes the answer.
func askWith[P, R any](ctx context.Context, raw json.RawMessage, ask func(context.Context, P) (R, error)) (json.RawMessage, error) {
	var params P
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`) // the go-sdk's methods want params
	}
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: %v", err)}
	}
	res, err := ask(ctx, params)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
