package fastrelay

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/plainjson"
)

// Govern runs one relayed tools/call under the gateway's policy and audit, as
// the decoding relay does: guard.Before (a refusal is the tool's error
// result), relay with the arguments the guard left under the guard's timeout,
// guard.After only when the guard wants the result (the result stays bytes
// otherwise), then one audit record. relay sets c.UpstreamSession. It returns
// the result's JSON for transport.AnswerRaw, or the JSON-RPC error to answer.
// guard and auditor may be nil.
func Govern(ctx context.Context, guard gateway.Guard, auditor gateway.Auditor, c *gateway.Call,
	relay func(ctx context.Context, args json.RawMessage) (Reply, error)) (json.RawMessage, error) {
	received := c.Arguments
	result, outcome, err := govern(ctx, guard, c, relay)
	if auditor != nil {
		rec := &gateway.Record{
			ID: c.ID, Time: c.Started, Server: c.Server, Audience: c.Audience, Principal: principalName(c.Principal),
			Upstream: c.Upstream, UpstreamSession: c.UpstreamSession, Method: c.Method, Name: c.Name,
			Arguments: received, Outcome: outcome, ResultBytes: len(result),
			LatencyMS: float64(time.Since(c.Started)) / float64(time.Millisecond),
		}
		if err != nil {
			rec.Error = err.Error()
		}
		auditor.Record(context.WithoutCancel(ctx), rec)
	}
	return result, err
}

func govern(ctx context.Context, guard gateway.Guard, c *gateway.Call,
	relay func(ctx context.Context, args json.RawMessage) (Reply, error)) (json.RawMessage, string, error) {
	if guard != nil {
		if err := guard.Before(ctx, c); err != nil {
			return refused(err, gateway.OutcomeDenied)
		}
		if d := guard.Timeout(c); d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	reply, err := relay(ctx, c.Arguments)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, gateway.OutcomeTimeout, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool " + c.Name + ": the upstream did not answer in time"}
	case errors.Is(err, context.Canceled):
		return nil, gateway.OutcomeCancelled, err
	case err != nil:
		return nil, gateway.OutcomeError, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool " + c.Name + ": " + err.Error()}
	case reply.Error != nil:
		return nil, gateway.OutcomeError, reply.Error
	}
	result := reply.Result
	if guard != nil && guard.WantsResult(c) {
		checked, err := guard.After(ctx, c, result)
		if err != nil {
			return refused(err, gateway.OutcomeGuard)
		}
		result = Canonical(checked)
	}
	if IsToolError(result) {
		return result, gateway.OutcomeToolError, nil
	}
	return result, gateway.OutcomeOK, nil
}

// refused is the answer to a call a policy refused: a *gateway.Refusal is the
// tool's error result with its message and its reason as the outcome
// (fallback when it has none); any other error is the guard failing, answered
// as an internal error.
func refused(err error, fallback string) (json.RawMessage, string, error) {
	var r *gateway.Refusal
	if !errors.As(err, &r) {
		return nil, gateway.OutcomeError, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway's policy failed: " + err.Error()}
	}
	outcome := r.Reason
	if outcome == "" {
		outcome = fallback
	}
	return ErrorResult(r.Message), outcome, nil
}

// ErrorResult is a tool result reporting msg as an error, as the go-sdk encodes
// it.
func ErrorResult(msg string) json.RawMessage {
	b := append([]byte(nil), `{"content":[{"type":"text","text":`...)
	b = plainjson.AppendString(b, msg)
	return append(b, `}],"isError":true}`...)
}

// principalName is what a record names the caller by.
func principalName(p *gateway.Principal) string {
	switch {
	case p == nil:
		return "anonymous"
	case p.Name != "":
		return p.Name
	case p.ID != "":
		return p.ID
	}
	return "anonymous"
}

// IsToolError reports whether a result (compact JSON, as Canonical gives)
// has "isError":true among its own members, not in a nested object.
func IsToolError(result []byte) bool {
	depth, inString := 0, false
	for i := 0; i < len(result); i++ {
		c := result[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			const key = `"isError":true`
			if depth == 1 && len(result)-i >= len(key) && string(result[i:i+len(key)]) == key {
				// A key at the top level: the byte before it is '{' or ','.
				if p := result[i-1]; p == '{' || p == ',' {
					return true
				}
			}
			inString = true
		}
	}
	return false
}
