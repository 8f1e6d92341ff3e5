// Package pattern implements Helix's enterprise integration patterns as processors
// usable from Go and from YAML steps (internal/step wires them):
//
//   - [Choice]: content-based router, first matching branch wins (Camel choice/when/otherwise).
//   - [Multicast]: send a copy of the exchange to several branches, sequentially or in
//     parallel, and collect the replies in branch order; with an aggregation
//     ([NewMulticastAggregate]) it completes on a size or a timeout.
//   - [Split]: run steps once per element of a list (or per line or chunk of a text),
//     sequentially or in parallel, and collect the results in input order (Camel's
//     Splitter).
//   - [Enrich]: evaluate a script whose top-level assignments become exchange variables.
//   - [Wiretap]: send a copy to an endpoint asynchronously, never delaying or failing
//     the main exchange.
//
// Every processor is safe for concurrent use. Processors that start goroutines
// (multicast, split, wiretap) own them: they are stopped by the exchange's context, by
// the multicast's or split's completion, or drained by Stop (the engine calls Stop on
// every step that implements component.Service). docs/patterns.md is the user
// documentation.
package pattern
