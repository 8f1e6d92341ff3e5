//go:build !race

package testtools

// raceEnabled reports whether this test binary runs with the race detector.
const raceEnabled = false
