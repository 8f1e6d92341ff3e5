//go:build race

package cli

// raceEnabled: this test binary runs under -race.
const raceEnabled = true
