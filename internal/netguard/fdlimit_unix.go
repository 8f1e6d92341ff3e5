//go:build unix

package netguard

import (
	"fmt"
	"math"
	"syscall"
)

// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit and returns
// the soft limit in force afterwards. Go's runtime does the same on start-up
// on most systems; calling it makes the rule explicit (and holds where the
// runtime does not, or a library lowered it).
func RaiseFileLimit() (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return clampLimit(lim.Cur), fmt.Errorf("raise RLIMIT_NOFILE from %d to %d: %w", lim.Cur, lim.Max, err)
		}
	}
	return fileLimit(), nil
}

// fileLimit is the soft RLIMIT_NOFILE (0 when it cannot be read).
func fileLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return clampLimit(lim.Cur)
}

func clampLimit(v uint64) int {
	if v > math.MaxInt32 { // RLIM_INFINITY and the like: no practical limit
		return math.MaxInt32
	}
	return int(v)
}
