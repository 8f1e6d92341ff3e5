package engine

import "github.com/arvenza/helix/pkg/exchange"

// ClientMessage is the failure without the name of the step ("helix.yaml:14:9
// transform"), which is for logs: see [exchange.ClientMessage].
func (e *StepError) ClientMessage() string { return exchange.ClientMessage(e.Err) }
