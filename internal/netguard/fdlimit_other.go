//go:build !unix

package netguard

// RaiseFileLimit does nothing where there is no RLIMIT_NOFILE; it returns 0
// (unknown).
func RaiseFileLimit() (int, error) { return 0, nil }

func fileLimit() int { return 0 }
