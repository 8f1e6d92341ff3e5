package client

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/durable"
)

// sendIdempotencyKey puts the idempotency key of a durable run's step into the
// call's _meta (durable.MetaKey), so that a server that honours it (a Helix
// server does) answers a call repeated after a crash with the result of the
// first one instead of running the tool again. A call outside a durable run
// carries no key: each such call is a new one.
func sendIdempotencyKey(ctx context.Context, params *sdk.CallToolParams) {
	key, ok := durable.KeyFrom(ctx)
	if !ok {
		return
	}
	meta := params.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	meta[durable.MetaKey] = key
	params.SetMeta(meta)
}
