package gateway

import (
	"context"
	"encoding/json"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk fills a form's schema defaults into an elicitation's answer on
// both sides of the gateway: ServerSession.Elicit into the downstream
// client's answer, and the Client answering the upstream into what the
// gateway's handler returns. The upstream must get the client's answer as
// the client gave it, so the gateway keeps a copy of that answer as it
// arrived (server sending middleware, before the defaults) and returns it
// from the upstream Client's receiving middleware (after them).

type rawAnswerKey struct{}

// rawAnswer holds the client's answer to one relayed elicitation.
type rawAnswer struct {
	mu  sync.Mutex
	res *sdk.ElicitResult
}

func (r *rawAnswer) set(res *sdk.ElicitResult, replace bool) {
	if r == nil || res == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res == nil || replace {
		r.res = cloneElicitResult(res)
	}
}

func (r *rawAnswer) get() *sdk.ElicitResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res
}

func withRawAnswer(ctx context.Context, r *rawAnswer) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, rawAnswerKey{}, r)
}

func rawAnswerFrom(ctx context.Context) *rawAnswer {
	r, _ := ctx.Value(rawAnswerKey{}).(*rawAnswer)
	return r
}

// cloneElicitResult copies res deeply: the go-sdk fills defaults into the
// content map in place.
func cloneElicitResult(res *sdk.ElicitResult) *sdk.ElicitResult {
	b, err := json.Marshal(res)
	if err != nil {
		return nil
	}
	var out sdk.ElicitResult
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return &out
}

// SendingMiddleware keeps the downstream client's answer to a relayed
// elicitation/create as it arrived.
func (g *Gateway) SendingMiddleware() sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "elicitation/create" && err == nil {
				if er, ok := res.(*sdk.ElicitResult); ok {
					rawAnswerFrom(ctx).set(er, true)
				}
			}
			return res, err
		}
	}
}

// rawElicitMiddleware is receiving middleware of an upstream session's
// Client: it answers elicitation/create with the client's raw answer.
func rawElicitMiddleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "elicitation/create" {
			return next(ctx, method, req)
		}
		raw := &rawAnswer{}
		res, err := next(withRawAnswer(ctx, raw), method, req)
		if err != nil {
			return res, err
		}
		if r := raw.get(); r != nil {
			return r, nil
		}
		return res, err
	}
}

// askRaw wraps the fast relay's ask so that an elicitation's answer goes to
// the upstream as the client gave it.
func askRaw(ask func(context.Context, string, json.RawMessage) (json.RawMessage, error)) func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if method != "elicitation/create" {
			return ask(ctx, method, params)
		}
		raw := &rawAnswer{}
		out, err := ask(withRawAnswer(ctx, raw), method, params)
		if r := raw.get(); err == nil && r != nil {
			return json.Marshal(r)
		}
		return out, err
	}
}
