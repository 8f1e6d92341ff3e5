// Package workflowtest runs the unit tests of workflows (`helix test`): the cases of
// a configuration's `tests:` lists, each an input exchange, mocked targets and the
// expected reply.
//
// Every case gets an application of its own, built from the configuration like
// `helix run` builds it, with the real steps and components. Nothing listens or
// polls: triggers are not started, except the in-process ones (direct://, tool://,
// agent://) so that workflows can call each other; the case's input goes straight
// into its workflow. The targets its mocks name are replaced through the engine's
// one interception point, [engine.Context.OverrideProducers]; every other target
// reaches its real component.
package workflowtest
