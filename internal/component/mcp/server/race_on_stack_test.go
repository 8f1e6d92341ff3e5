//go:build race

package server

// RaceBuild: this test binary runs with the race detector, whose
// instrumentation makes frames larger and goroutine stacks start larger.
const RaceBuild = true
