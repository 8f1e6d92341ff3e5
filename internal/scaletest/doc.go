// Package scaletest holds the multi-process tests of Helix scaled out: several
// `helix run` replicas of one configuration behind the engine that spreads the
// work between them — HAProxy in front of stateless (and sticky stateful) MCP
// servers, a Kafka consumer group for kafka:// triggers. They exercise the helix
// binary as a deployment runs it, so they belong to no single component; the
// third such test, leader election for singleton triggers, lives with its code in
// internal/cluster. docs/scaling.md reports what these tests measure.
//
// The package has no code of its own besides this comment: everything is in its
// _test.go files, on the helpers of internal/testtools.
package scaletest
