package gateway

import (
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/component/mcp/client"
)

// Questions of an upstream to a client of MCP 2026-07-28. Such a client is not
// sent requests: Helix's server answers its call with the questions (input
// requests) and the client calls again with the answers. The gateway asks
// through the call's ask.Client as Helix's mcp:// client forwards questions:
// each question is named by its content, so that when the retried call is
// relayed again and the upstream asks the same questions again (in any order,
// several at once), each finds its own answer.

// elicitNewEra asks p of the 2026-07-28 client whose call f is.
func (f *inflight) elicitNewEra(p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	c := ask.FromContext(f.ctx)
	if c == nil || p == nil {
		return nil, errNoCaller
	}
	if p.Mode == "url" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the gateway relays form elicitation to clients of 2026-07-28, not url mode"}
	}
	q, err := client.ElicitationQuestion(p)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	a, err := c.Elicit(f.ctx, q)
	if err != nil {
		return nil, err
	}
	res := &sdk.ElicitResult{Action: a.Action}
	if a.Action == ask.ActionAccept {
		res.Content = a.Content
	}
	return res, nil
}

// sampleNewEra is elicitNewEra for sampling/createMessage.
//
//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
func (f *inflight) sampleNewEra(p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
	c := ask.FromContext(f.ctx)
	if c == nil || p == nil {
		return nil, errNoCaller
	}
	q, err := client.SamplingQuestion(p)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	a, err := c.Sample(f.ctx, q)
	if err != nil {
		return nil, err
	}
	return client.SamplingResult(a), nil
}
