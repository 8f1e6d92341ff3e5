// Package component defines the contracts between the engine and the components
// that connect workflows to the outside world. A Component is registered under a URI
// scheme; it builds an Endpoint per distinct URI; an endpoint gives Producers (send)
// and/or Consumers (receive, feeding a Processor).
//
// # Modules: a component owns its scheme
//
// Everything Helix knows about a scheme comes from the component's module, declared
// in the component's own folder and registered from its init function:
//
//	// spec.go: the URI (options, headers, role) and the scheme's traits
//	var Spec = &component.Spec{Scheme: "kafka", …, FreshExchanges: true, Trace: traceInfo}
//
//	// module.go
//	func init() {
//		component.Register(component.Module{Spec: Spec, New: func(env component.Env) (component.Component, error) {
//			return New(Options{Logger: env.Logger}), nil
//		}})
//	}
//
// A blank import of the package puts the component into a build; Helix's own are
// imported by internal/component/all, one file per component, so a build tag on
// that file leaves a component out (kafka.go: -tags helix_nokafka), and the file
// counterpart calls [RegisterAbsent] so that a configuration naming the scheme is
// told why it is not available. Adding a component is one folder plus one import.
//
// What the rest of Helix reads from the module, never by comparing scheme names:
//   - the [Spec]: URI parsing and validation, `helix components`, the pages of
//     docs/components/ and the JSON Schema of the YAML file;
//   - the traits on the Spec: [Spec.FreshExchanges] (a trigger whose exchanges
//     come from outside, so a workflow's scripts cannot see another workflow's
//     variables), [Spec.Singleton] (run on the elected leader only), [Spec.Trace]
//     (the kind and attributes of the span of an exchange the trigger started,
//     as plain data: components need no tracing library for it);
//   - New, which builds the component for one application from an [Env]: the
//     engine context, the logger and the module's own settings block
//     helix.<scheme>, which the module declares and decodes itself (the Kafka
//     module declares helix.kafka through internal/config's module settings).
//
// A module whose component needs wiring a module cannot see (the MCP client and
// server) registers its spec with a nil New, and the application adds the
// component itself. A test or an embedding program may still add any component to
// a context by hand (engine.Context.AddComponent); one added that way is kept when
// the registered modules are built.
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
