package embedded

import (
	"os"
	"syscall"
	"unsafe"
)

// dropMapped lets the kernel take back the resident pages of b, a part of a
// read-only file mapping, after a pass over all of it (they are read again
// from the file, or the page cache, when next used): a pass over every vector
// at open or during a build then does not leave them all counted in the
// process's resident memory.
func dropMapped(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return
	}
	syscall.Madvise(b[lo-start:hi-start], syscall.MADV_DONTNEED) // advice: nothing to do when refused
}
