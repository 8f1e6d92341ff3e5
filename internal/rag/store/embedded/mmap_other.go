//go:build !unix

package embedded

import (
	"io"
	"os"
)

// mapFile reads f's size bytes: without mmap, the saved index is in the heap.
func mapFile(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), b); err != nil {
		return nil, err
	}
	return b, nil
}

func unmapFile([]byte) {}
