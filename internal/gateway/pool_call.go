package gateway

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller is a Pool that runs a request itself: on a new session, at another
// endpoint, when it failed before it could have reached the upstream, and
// never again once it may have (internal/gateway/upstream's Pool).
type Caller interface {
	Call(ctx context.Context, key SessionKey, opts func() *sdk.ClientOptions, f func(ctx context.Context, cs *sdk.ClientSession) error) error
}

// callOn runs f on the upstream session of key: through the pool's Call when
// it is a Caller, else on the session Session gives.
func callOn(ctx context.Context, p Pool, key SessionKey, opts func() *sdk.ClientOptions, f func(ctx context.Context, cs *sdk.ClientSession) error) error {
	if c, ok := p.(Caller); ok {
		return c.Call(ctx, key, opts, f)
	}
	cs, err := p.Session(ctx, key, opts)
	if err != nil {
		return err
	}
	return f(ctx, cs)
}

// Explained is an error of an upstream pool that says what happened in words
// a client may see (no URL, no header): a request that may have run and was
// not sent again, an answer over the size bound.
type Explained interface {
	error
	Explain() string
}

// codeRejectedByTransport is the go-sdk client's code for a request its
// transport could not deliver or read the answer of (no connection, an HTTP
// error): it is no answer of the upstream, and its message says nothing a
// client could act on.
const codeRejectedByTransport = -32005

// upstreamAnswer is the JSON-RPC error the upstream answered, when err holds
// one (not the SDK's transport failure, which the client is told as "could
// not be reached").
func upstreamAnswer(err error) (*jsonrpc.Error, bool) {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code != codeRejectedByTransport {
		return werr, true
	}
	return nil, false
}

// explanation is the client's message for err, when a pool explained it.
func explanation(err error) (string, bool) {
	var e Explained
	if errors.As(err, &e) {
		return e.Explain(), true
	}
	return "", false
}
