package engine

import (
	"context"

	"github.com/arvenza/helix/pkg/exchange"
)

// Names the external tests (package engine_test) use that are not public API.

type FailureLogLimit = failureLogLimit

const (
	FailuresSuppressedMessage = failuresSuppressedMessage
	MaxDynamicProducers       = maxDynamicProducers
)

func (c *Context) SetFailureLogLimit(l FailureLogLimit) { c.setFailureLogLimit(l) }
func (c *Context) DynamicProducers() int                { return c.openDynamicProducers() }
func (c *Context) IsSingleton(rawURI string) bool       { return c.isSingleton(rawURI) }

func (c *Context) SendDynamic(ctx context.Context, rawURI string, ex *exchange.Exchange) error {
	return c.sendResolved(ctx, rawURI, ex)
}
