//go:build !unix

package embedded

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir creates dir's LOCK file exclusively: without flock, a store left
// locked by a crashed process needs the file removed by hand, which the error
// says.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if os.IsExist(err) {
			return nil, fmt.Errorf("store %s is already open by another Helix store (or one that crashed: if none runs, remove %s)", dir, path)
		}
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	return f, nil
}

func unlockDir(f *os.File) {
	if f != nil {
		name := f.Name()
		f.Close()
		os.Remove(name)
	}
}

func syncDir(string) error { return nil }
