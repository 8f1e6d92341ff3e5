//go:build race

package testtools

// raceEnabled reports whether this test binary runs with the race detector; HelixBinary then
// builds helix with -race too, so integration tests also race-check the helix process.
const raceEnabled = true
