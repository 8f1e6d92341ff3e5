package anthropic

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/arvenza/helix/internal/agent"
)

// stream sends p as a streamed request, gives onText each text delta as it
// arrives, and returns the accumulated message as Generate does.
func (m *Model) stream(ctx context.Context, p sdk.MessageNewParams, onText func(string)) (*agent.ModelResponse, error) {
	s := m.client.Messages.NewStreaming(ctx, p)
	defer s.Close()
	var msg sdk.Message
	inputs := map[int][]byte{}
	stopped := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, m.streamError("stream event out of order: " + err.Error())
		}
		switch ev.Type {
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					onText(ev.Delta.Text)
				}
			case "input_json_delta":
				inputs[int(ev.Index)] = append(inputs[int(ev.Index)], ev.Delta.PartialJSON...)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, m.wrapStream(ctx, err)
	}
	if !stopped {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		// Closed cleanly but early (a proxy, a server restart): the message is incomplete.
		return nil, m.streamError("stream ended before message_stop")
	}
	return response(&msg, inputs), nil
}

// wrapStream is wrap for the errors of a stream: an HTTP status before the stream
// started is the provider's error as usual (429/5xx retryable); an error event
// (the SDK makes it an *sdk.Error with the stream's 200 status), a malformed event
// or a broken connection is not retryable, since deltas may already have been
// given out.
func (m *Model) wrapStream(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		if ae.StatusCode >= 400 {
			return m.wrap(ctx, err)
		}
		msg := providerMessage(ae.RawJSON())
		if msg == "" {
			msg = ae.RawJSON()
		}
		return m.streamError("error event in the stream: " + msg)
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return m.streamError("malformed stream event: " + err.Error())
	}
	return m.streamError("reading the stream: " + err.Error())
}

func (m *Model) streamError(msg string) error {
	return agent.NewProviderError("anthropic", m.cfg.APIKey, 0, msg, nil)
}
