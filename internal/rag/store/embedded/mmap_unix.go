//go:build unix

package embedded

import (
	"os"
	"syscall"
)

// mapFile maps f's size bytes read-only.
func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapFile(b []byte) { syscall.Munmap(b) }
