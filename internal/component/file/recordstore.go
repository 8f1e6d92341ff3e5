package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/arvenza/helix/internal/recordstore"
	"github.com/arvenza/helix/pkg/uri"
)

var _ recordstore.Opener = (*Component)(nil)

// OpenRecordStore opens a JSON-lines file for records (an audit trail): the URI's
// address is the file (file:///var/log/helix/audit.jsonl), or its directory with
// fileName= naming the file. Each batch is appended and fsynced before Write
// returns. A batch written again after a failed fsync may leave a record twice in
// the file: a file keeps records at least once.
func (c *Component) OpenRecordStore(u *uri.URI, o recordstore.Options) (recordstore.Store, error) {
	path := filepath.FromSlash(u.Host + u.Path)
	for k := range u.Params {
		if k != "fileName" {
			return nil, fmt.Errorf("%s: option %s does not apply to a file of records (only fileName= does)", u.Raw, k)
		}
	}
	if name := u.Params.Get("fileName"); name != "" {
		path = filepath.Join(path, filepath.FromSlash(name))
	}
	if path == "" || path == "/" {
		return nil, fmt.Errorf("%s: name the file, as in file:///var/log/helix/audit.jsonl", u.Raw)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u.Raw, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s: %s is a directory; name a file in it (fileName=audit.jsonl)", u.Raw, abs)
	}
	if o.MaxFileBytes <= 0 {
		return nil, fmt.Errorf("%s: the largest size of the file must be positive, not %d", u.Raw, o.MaxFileBytes)
	}
	return &fileStore{path: abs, max: o.MaxFileBytes, keep: o.KeepFiles}, nil
}

// fileStore appends records to path, rotating it before it grows past max.
type fileStore struct {
	path string
	max  int64
	keep int

	mu   sync.Mutex
	f    *os.File
	size int64
}

func (s *fileStore) Write(_ context.Context, recs []recordstore.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		if err := s.open(); err != nil {
			return err
		}
	}
	var buf []byte
	for _, r := range recs {
		line := len(r.JSON) + 1
		if s.size+int64(len(buf)+line) > s.max && s.size+int64(len(buf)) > 0 {
			// The batch so far goes into the current file, then the file rotates:
			// no file grows past max unless one record alone is larger.
			if err := s.flush(buf); err != nil {
				return err
			}
			buf = buf[:0]
			if err := s.rotate(); err != nil {
				return err
			}
		}
		buf = append(append(buf, r.JSON...), '\n')
	}
	return s.flush(buf)
}

// flush appends buf and fsyncs: the records are durable when it returns nil.
func (s *fileStore) flush(buf []byte) error {
	if len(buf) > 0 {
		n, err := s.f.Write(buf)
		s.size += int64(n)
		if err != nil {
			return fmt.Errorf("write %s: %w", s.path, err)
		}
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", s.path, err)
	}
	return nil
}

func (s *fileStore) open() error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("create the directory of %s: %w", s.path, err)
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	s.f, s.size = f, fi.Size()
	return nil
}

// rotate renames path to path.1 (path.1 to path.2 …, dropping what passes keep)
// and opens a new file.
func (s *fileStore) rotate() error {
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	s.f = nil
	rotated := func(n int) string { return s.path + "." + strconv.Itoa(n) }
	if err := os.Remove(rotated(s.keep)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotate %s: %w", s.path, err)
	}
	for n := s.keep - 1; n >= 1; n-- {
		if err := os.Rename(rotated(n), rotated(n+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotate %s: %w", s.path, err)
		}
	}
	if s.keep > 0 {
		if err := os.Rename(s.path, rotated(1)); err != nil {
			return fmt.Errorf("rotate %s: %w", s.path, err)
		}
	} else if err := os.Remove(s.path); err != nil {
		return fmt.Errorf("rotate %s: %w", s.path, err)
	}
	return s.open()
}

func (s *fileStore) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
