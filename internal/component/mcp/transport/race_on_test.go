//go:build race

package transport

// raceEnabled: this test binary runs with the race detector, whose
// instrumentation makes goroutine stacks grow further.
const raceEnabled = true
