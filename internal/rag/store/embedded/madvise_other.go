//go:build !linux

package embedded

// dropMapped does nothing here: see madvise_linux.go.
func dropMapped([]byte) {}
