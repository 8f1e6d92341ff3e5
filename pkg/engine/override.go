package engine

import (
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/uri"
)

// ProducerOverride returns the producer to use for a target URI in place of the one
// its component would build, and true; or false to leave the URI to its component.
type ProducerOverride func(u *uri.URI) (component.Producer, bool)

// OverrideProducers makes every new target producer — of a static URI or of one
// resolved from placeholders — go through f first. It is the one interception point
// of `helix test`: mocked endpoints answer with canned replies while the real
// components serve the rest. Call it before the first exchange; producers already
// built are kept.
func (c *Context) OverrideProducers(f ProducerOverride) {
	c.mu.Lock()
	c.override = f
	c.mu.Unlock()
}

// overriddenProducer asks the override, if any, for u's producer.
func (c *Context) overriddenProducer(u *uri.URI) (component.Producer, bool) {
	c.mu.Lock()
	f := c.override
	c.mu.Unlock()
	if f == nil {
		return nil, false
	}
	return f(u)
}
