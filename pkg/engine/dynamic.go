package engine

import (
	"container/list"
	"context"
	"fmt"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// maxDynamicProducers bounds how many producers built for placeholder URIs
// (http://api/users/${body.userId}) stay open. Each distinct resolved URI needs its
// own endpoint; caching them all would let memory grow with every new user id, so the
// least recently used ones beyond this bound are stopped once no exchange uses them.
const maxDynamicProducers = 256

// dynamicKey identifies a cached producer: the resolved URI, normalized, and the
// template it was resolved from ("" for a URI sent as it is).
type dynamicKey struct{ uri, template string }

type dynamicEntry struct {
	key     dynamicKey
	p       component.Producer
	refs    int
	evicted bool
	elem    *list.Element
}

type dynamicProducers struct {
	lru     *list.List // front = most recently used; values are *dynamicEntry
	entries map[dynamicKey]*dynamicEntry
}

// sendResolved delivers ex to a URI resolved per exchange. Its producer comes from a
// bounded LRU cache instead of the context's permanent producer map.
func (c *Context) sendResolved(ctx context.Context, rawURI string, ex *exchange.Exchange) error {
	return c.sendDynamic(ctx, "", rawURI, ex)
}

// SendTemplate resolves the placeholders of template against ex with
// [uri.ExpandURI] (substituted values cannot add options) and delivers ex to the
// result like sendResolved. The component sees the template as the endpoint URI's
// Template, so it can tell options written by the author from options supplied by
// the exchange (file:// confines a placeholder fileName to its directory).
func (c *Context) SendTemplate(ctx context.Context, template string, ex *exchange.Exchange) error {
	target, err := uri.ExpandURI(template, ex)
	if err != nil {
		return fmt.Errorf("resolve target: %w", err)
	}
	return c.sendDynamic(ctx, template, target, ex)
}

func (c *Context) sendDynamic(ctx context.Context, template, rawURI string, ex *exchange.Exchange) error {
	e, err := c.acquireDynamic(ctx, template, rawURI)
	if err != nil {
		return err
	}
	defer c.releaseDynamic(ctx, e)
	return e.p.Process(ctx, ex)
}

func (c *Context) acquireDynamic(ctx context.Context, template, rawURI string) (*dynamicEntry, error) {
	u, err := uri.Parse(rawURI)
	if err != nil {
		return nil, err
	}
	u.Template = template
	// The URI and the template are separate fields of the key: a URI holding a
	// NUL byte and a template must not pass for that template's entry.
	key := dynamicKey{uri: u.Normalized(), template: template}
	c.mu.Lock()
	// A URI that is also a static target shares the permanent producer, unless it was
	// resolved from a template: its endpoint then knows which options came from the
	// exchange, and is cached per template.
	if template == "" {
		if p, ok := c.producers[key.uri]; ok {
			c.mu.Unlock()
			return &dynamicEntry{key: key, p: p, refs: 1, evicted: false, elem: nil}, nil
		}
	}
	if c.producersClosed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: the context is stopped", c.ShownURI(rawURI))
	}
	if c.dynamic.entries == nil {
		c.dynamic.entries = map[dynamicKey]*dynamicEntry{}
		c.dynamic.lru = list.New()
	}
	if e, ok := c.dynamic.entries[key]; ok {
		e.refs++
		c.dynamic.lru.MoveToFront(e.elem)
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	p, err := c.newDynamicProducer(u, rawURI)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, fmt.Errorf("start producer %s: %w", c.ShownURI(rawURI), err)
	}
	c.mu.Lock()
	if c.producersClosed {
		// stopDynamic ran while this producer was starting (entries and lru are nil
		// now): stop it here, nobody else would.
		c.mu.Unlock()
		if err := p.Stop(ctx); err != nil {
			c.Logger().Warn("stop producer created during Stop", "uri", c.ShownURI(rawURI), "error", err)
		}
		return nil, fmt.Errorf("%s: the context is stopped", c.ShownURI(rawURI))
	}
	if e, ok := c.dynamic.entries[key]; ok { // lost a race: use the winner's
		e.refs++
		c.dynamic.lru.MoveToFront(e.elem)
		c.mu.Unlock()
		_ = p.Stop(ctx)
		return e, nil
	}
	e := &dynamicEntry{key: key, p: p, refs: 1}
	e.elem = c.dynamic.lru.PushFront(e)
	c.dynamic.entries[key] = e
	var toStop []component.Producer
	for c.dynamic.lru.Len() > maxDynamicProducers {
		old := c.dynamic.lru.Remove(c.dynamic.lru.Back()).(*dynamicEntry)
		delete(c.dynamic.entries, old.key)
		old.evicted = true
		if old.refs == 0 {
			toStop = append(toStop, old.p)
		}
	}
	c.mu.Unlock()
	for _, p := range toStop {
		_ = p.Stop(ctx)
	}
	return e, nil
}

// newDynamicProducer builds (without starting) the producer of a resolved URI: the
// override's (override.go), else one from a new endpoint of its component.
func (c *Context) newDynamicProducer(u *uri.URI, rawURI string) (component.Producer, error) {
	if p, ok := c.overriddenProducer(u); ok {
		return p, nil
	}
	comp, ok := c.Component(u.Scheme)
	if !ok {
		return nil, fmt.Errorf("%s: no component for scheme %q", rawURI, u.Scheme)
	}
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", component.RedactURI(comp, rawURI), err)
	}
	p, err := ep.CreateProducer()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", component.RedactURI(comp, rawURI), err)
	}
	return p, nil
}

func (c *Context) releaseDynamic(ctx context.Context, e *dynamicEntry) {
	if e.elem == nil { // permanent producer
		return
	}
	c.mu.Lock()
	e.refs--
	stop := e.evicted && e.refs == 0
	c.mu.Unlock()
	if stop {
		_ = e.p.Stop(ctx)
	}
}

// openDynamicProducers reports how many placeholder-URI producers are open (for tests
// and metrics).
func (c *Context) openDynamicProducers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.dynamic.entries)
}

// stopDynamic stops every cached dynamic producer; called by Stop after draining.
func (c *Context) stopDynamic(ctx context.Context) []error {
	c.mu.Lock()
	entries := c.dynamic.entries
	c.dynamic.entries = nil
	c.dynamic.lru = nil
	c.mu.Unlock()
	var errs []error
	for _, e := range entries {
		if err := e.p.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
