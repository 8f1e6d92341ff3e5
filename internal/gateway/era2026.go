package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/component/mcp/transport"
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
	c := f.asker()
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
	c := f.asker()
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

// Input-required results of an upstream (one that speaks 2026-07-28 itself).
// The gateway's upstream sessions do not answer them on their own (the
// go-sdk's automatic round trips are off): the gateway answers each round's
// input requests under the upstream's own ids, so that a 2026-07-28 client
// sees the questions as the upstream named them, and a client of an earlier
// protocol is asked by requests on its session. An unanswered question of a
// 2026-07-28 client stops the call, which is then answered with every question
// still pending; the client's retry is relayed afresh and the upstream's
// rounds are answered again, now from the client's answers.

// maxInputRounds bounds the rounds of one upstream request, as the go-sdk's
// own round trips are bounded: an upstream that keeps asking is not followed
// forever.
const maxInputRounds = 10

// downstream is the call in flight that req belongs to, for its questions.
func downstream(ctx context.Context, req sdk.Request) *inflight {
	f := &inflight{ctx: ctx, extra: req.GetExtra()}
	f.ss, _ = req.GetSession().(*sdk.ServerSession)
	return f
}

// roundTrips sends an upstream request (call, with the answers and the
// upstream's requestState of the round before) until its result asks nothing
// more. call returns the result, its input requests (nil: none) and state.
func roundTrips[R any](f *inflight, call func(answers sdk.InputResponseMap, state string) (R, sdk.InputRequestMap, string, error)) (R, error) {
	var answers sdk.InputResponseMap
	var state string
	for round := 1; ; round++ {
		res, asks, next, err := call(answers, state)
		if err != nil || asks == nil {
			return res, err
		}
		if round == maxInputRounds {
			var zero R
			return zero, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("the upstream asked for input %d times in one request; the gateway stopped following it", maxInputRounds)}
		}
		if answers, err = f.answerInputs(asks); err != nil {
			var zero R
			return zero, err
		}
		state = next
	}
}

// answerInputs answers one round of an upstream's input requests. Every
// question is put to a 2026-07-28 client before the call stops, so that it is
// answered with all of them at once.
func (f *inflight) answerInputs(asks sdk.InputRequestMap) (sdk.InputResponseMap, error) {
	out := make(sdk.InputResponseMap, len(asks))
	var pending error
	for _, id := range slices.Sorted(maps.Keys(asks)) {
		resp, err := f.answerInput(id, asks[id])
		switch {
		case errors.Is(err, ask.ErrInputRequired):
			pending = err
		case err != nil:
			return nil, err
		default:
			out[id] = resp
		}
	}
	if pending != nil {
		return nil, pending
	}
	return out, nil
}

// answerInput answers one input request named id.
func (f *inflight) answerInput(id string, q sdk.InputRequest) (sdk.InputResponse, error) {
	if f.ss != nil && !f.newEra() {
		ctx := transport.RelatedTo(f.ctx, f.extra)
		switch p := q.(type) {
		case *sdk.ElicitParams:
			raw := &rawAnswer{} // the client's answer as it gave it (rawanswer.go)
			res, err := f.ss.Elicit(withRawAnswer(ctx, raw), p)
			if r := raw.get(); err == nil && r != nil {
				return r, nil
			}
			return res, err
		//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
		case *sdk.CreateMessageWithToolsParams:
			//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
			return f.ss.CreateMessageWithTools(ctx, p)
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		case *sdk.ListRootsParams:
			//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
			return f.ss.ListRoots(ctx, p)
		}
		return nil, fmt.Errorf("input request %q: %T is no question the gateway relays", id, q)
	}
	c := f.asker()
	if c == nil {
		return nil, errNoCaller
	}
	switch p := q.(type) {
	case *sdk.ElicitParams:
		eq, err := client.ElicitationQuestion(p)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		eq.ID = id
		a, err := c.Elicit(f.ctx, eq)
		if err != nil {
			return nil, err
		}
		res := &sdk.ElicitResult{Action: a.Action}
		if a.Action == ask.ActionAccept {
			res.Content = a.Content
		}
		return res, nil
	//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
	case *sdk.CreateMessageWithToolsParams:
		//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
		var plain sdk.CreateMessageParams
		if b, err := json.Marshal(p); err != nil || json.Unmarshal(b, &plain) != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("input request %q: a sampling request with tools or several content blocks per message is not relayed", id)}
		}
		sq, err := client.SamplingQuestion(&plain)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		sq.ID = id
		a, err := c.Sample(f.ctx, sq)
		if err != nil {
			return nil, err
		}
		return client.SamplingResult(a), nil
	//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
	case *sdk.ListRootsParams:
		roots, err := c.Roots(f.ctx, &ask.RootsQuestion{ID: id})
		if err != nil {
			return nil, err
		}
		//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
		res := &sdk.ListRootsResult{Roots: make([]*sdk.Root, 0, len(roots))}
		for _, r := range roots {
			//lint:ignore SA1019 MCP roots: deprecated in protocol 2026-07-28, still relayed for clients that use it
			res.Roots = append(res.Roots, &sdk.Root{URI: r.URI, Name: r.Name})
		}
		return res, nil
	}
	return nil, fmt.Errorf("input request %q: %T is no question the gateway relays", id, q)
}

// asker is the ask.Client of f's 2026-07-28 client (nil: none), marking f
// stopped when a question goes out as an input request not yet answered, so
// that the call is audited as input_required rather than as the error the
// upstream makes of the refusal.
func (f *inflight) asker() ask.Client {
	c := ask.FromContext(f.ctx)
	if c == nil {
		return nil
	}
	return markingAsker{Client: c, f: f}
}

type markingAsker struct {
	ask.Client
	f *inflight
}

func (m markingAsker) note(err error) {
	if errors.Is(err, ask.ErrInputRequired) {
		m.f.stopped.Store(true)
	}
}

func (m markingAsker) Elicit(ctx context.Context, q *ask.Elicitation) (*ask.ElicitAnswer, error) {
	a, err := m.Client.Elicit(ctx, q)
	m.note(err)
	return a, err
}

func (m markingAsker) Sample(ctx context.Context, q *ask.Sampling) (*ask.SampleAnswer, error) {
	a, err := m.Client.Sample(ctx, q)
	m.note(err)
	return a, err
}

func (m markingAsker) Roots(ctx context.Context, q *ask.RootsQuestion) ([]ask.Root, error) {
	a, err := m.Client.Roots(ctx, q)
	m.note(err)
	return a, err
}
