// Package component defines the contracts between the engine and the components
// that connect workflows to the outside world. A Component is registered under a URI
// scheme; it builds an Endpoint per distinct URI; an endpoint gives Producers (send)
// and/or Consumers (receive, feeding a Processor).
//
// # Building endpoints
//
// The engine (pkg/engine's Context) calls CreateEndpoint without holding any of its
// locks, so CreateEndpoint may call back into the Context: Logger, Component,
// Endpoint of another URI (tool:// builds on direct://), Workflows. It must not ask
// for an endpoint of its own URI (that recurses), and it should not call Producer or
// Send: an endpoint is a description, not a connection.
//
// CreateEndpoint validates the URI and its options and acquires nothing: no
// listener, connection, file, goroutine or registration. It runs at validate time
// (helix validate builds every endpoint without starting anything), for every
// distinct resolved URI of a placeholder target, and possibly more than once for the
// same URI when two callers race (the engine keeps the first endpoint and drops the
// others). Whatever needs opening belongs in a Producer's or Consumer's Start, or in
// the component's Lifecycle.
//
// # Producers
//
// The engine creates a producer with CreateProducer, starts it, and owns it from then
// on: static targets get theirs when the context starts, placeholder targets
// (http://api/users/${body.id}) on first use, kept in a bounded cache whose least
// recently used producers are stopped once no exchange uses them. Every producer that
// was started is stopped exactly once by the engine — evicted, discarded because
// another caller won the race for the same URI, or at Stop. Producers may be created
// while Stop drains in-flight exchanges (those exchanges may still need them); once
// Stop has taken the producers to stop them, a producer whose Start finishes later
// is stopped at once and its caller gets a "the context is stopped" error.
//
// # Lifecycle
//
// The engine starts component lifecycles, then producers, then consumers; Stop stops
// consumers first, drains in-flight exchanges (up to the deadline of Stop's context),
// then stops producers and finally components. Start and Stop are called once each
// per producer or consumer.
//
// # Concurrency
//
// Components and endpoints are used from many goroutines: CreateEndpoint,
// CreateProducer and CreateConsumer may be called concurrently, and Process is called
// concurrently between a producer's Start and Stop (and must return promptly when
// its context is cancelled, which is how Stop ends exchanges that outlive the drain
// deadline). Stop may run while a Process call is still returning.
package component
