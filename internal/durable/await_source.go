package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// StartSources starts one consumer per endpoint the await: steps of ec take
// records from, each handing its records to [Waits.Deliver]. They run from the
// start, before any run waits, so that a record that comes early goes to the
// inbox instead of being lost. Stop them with the returned function.
func (w *Waits) StartSources(ctx context.Context, ec *engine.Context) (stop func(context.Context) error, err error) {
	type source struct {
		name    string
		matches map[string]func(context.Context, *exchange.Exchange) (string, error)
	}
	byURI := map[string]*source{}
	var order []string
	for _, s := range AwaitSources(ec) {
		src, ok := byURI[s.URI]
		if !ok {
			src = &source{name: s.Name, matches: map[string]func(context.Context, *exchange.Exchange) (string, error){}}
			byURI[s.URI] = src
			order = append(order, s.URI)
		}
		src.matches[s.MatchText] = s.Match
	}
	var started []component.Consumer
	stop = func(ctx context.Context) error {
		var errs []error
		for _, c := range started {
			errs = append(errs, c.Stop(ctx))
		}
		return errors.Join(errs...)
	}
	for _, u := range order {
		src := byURI[u]
		ep, err := ec.Endpoint(u)
		if err != nil {
			_ = stop(ctx)
			return nil, fmt.Errorf("await: from %s: %w", src.name, err)
		}
		c, err := ep.CreateConsumer(component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			return w.deliverExchange(ctx, src.name, src.matches, ex)
		}))
		if err == nil {
			err = c.Start(ctx)
		}
		if err != nil {
			_ = stop(ctx)
			return nil, fmt.Errorf("await: from %s: %w", src.name, err)
		}
		started = append(started, c)
	}
	return stop, nil
}

// deliverExchange hands a received record to the runs that wait for it, under
// each key the await: steps on its source compute. An error makes the consumer
// keep the record (Kafka does not commit its offset).
func (w *Waits) deliverExchange(ctx context.Context, source string, matches map[string]func(context.Context, *exchange.Exchange) (string, error), ex *exchange.Exchange) error {
	data, err := exchangeData(ex)
	if err != nil {
		w.log.Warn("durable: a record of an await: source is not JSON-able and is skipped", "source", source, "error", err)
		return nil
	}
	seen := map[string]bool{}
	for _, m := range matches {
		key, err := m(ctx, ex)
		if err != nil || key == "" || seen[key] {
			continue
		}
		seen[key] = true
		if err := w.Deliver(ctx, source, key, data); err != nil {
			return err
		}
	}
	return nil
}

// exchangeData is the Data of a ResolvedReceived for a received exchange: its
// body (JSON text as is, other bytes as a string).
func exchangeData(ex *exchange.Exchange) (json.RawMessage, error) {
	var body any = ex.In().Body()
	switch b := body.(type) {
	case []byte:
		if json.Valid(b) {
			body = json.RawMessage(b)
		} else {
			body = string(b)
		}
	case string:
		if json.Valid([]byte(b)) {
			body = json.RawMessage(b)
		}
	}
	return json.Marshal(map[string]any{"body": body})
}
