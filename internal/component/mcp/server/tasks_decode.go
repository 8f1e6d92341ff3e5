package server

import (
	"encoding/json"
	"errors"

	"github.com/arvenza/helix/pkg/exchange"
)

// decodeRunResult reads the exchange snapshot a durable run ended with.
func decodeRunResult(raw json.RawMessage) (*exchange.Exchange, error) {
	snap, ok := decodeSnapshot(raw)
	if !ok {
		return nil, errors.New("the run's snapshot is not readable")
	}
	ex := exchange.NewWithBody(exchange.InOut, snap.Body)
	for k, v := range snap.Headers {
		ex.In().SetHeader(k, v)
	}
	for k, v := range snap.Variables {
		ex.SetVariable(k, v)
	}
	return ex, nil
}
