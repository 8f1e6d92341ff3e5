package openai

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/arvenza/helix/internal/agent"
)

// stream sends body (a request with "stream": true) and decodes its events with
// the SDK, as its NewStreaming does; it gives onText each content (or refusal)
// delta of the first choice as it arrives, and returns the accumulated completion
// as Generate does.
func (m *Model) stream(ctx context.Context, body []byte, onText func(string)) (*agent.ModelResponse, error) {
	res, err := m.send.post(ctx, body, m.cfg.APIKey)
	s := ssestream.NewStream[sdk.ChatCompletionChunk](ssestream.NewDecoder(res), err)
	defer s.Close()
	var acc sdk.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		if !acc.AddChunk(chunk) {
			return nil, m.streamError("stream chunk does not continue the completion (another id or a bad index)")
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			// A refusal is the turn's text when there is no content (see response).
			if c.Delta.Content != "" {
				onText(c.Delta.Content)
			} else if c.Delta.Refusal != "" {
				onText(c.Delta.Refusal)
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, m.wrapStream(ctx, err)
	}
	// A stream that ends without a finish reason was cut short by something that
	// closed it cleanly (a proxy, a server restart); its text is incomplete.
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, m.streamError("stream ended before the completion finished")
	}
	return response(&acc.ChatCompletion)
}

// wrapStream is wrap for the errors of a stream: an HTTP status before the stream
// started is the provider's error as usual (429/5xx retryable); an error event, a
// malformed chunk or a broken connection is not retryable, since deltas may
// already have been given out.
func (m *Model) wrapStream(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var pe *agent.ProviderError
	var ae *sdk.Error
	if errors.As(err, &pe) || errors.As(err, &ae) {
		return m.wrap(ctx, err)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		msg := se.Message
		if json.Unmarshal(se.Event.Data, &body) == nil && body.Error.Message != "" {
			msg = body.Error.Message
			if body.Error.Type != "" {
				msg = body.Error.Type + ": " + msg
			}
		}
		return m.streamError("error event in the stream: " + msg)
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return m.streamError("malformed stream chunk: " + err.Error())
	}
	return m.streamError("reading the stream: " + err.Error())
}

func (m *Model) streamError(msg string) error {
	return agent.NewProviderError("openai", m.cfg.APIKey, 0, msg, nil)
}
