//go:build race

package console_test

// raceEnabled: the race detector is on, under which sync.Pool drops some of
// what is put back, so allocation counts do not hold.
const raceEnabled = true
