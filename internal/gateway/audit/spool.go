package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/arvenza/helix/internal/recordstore"
)

// spool keeps on disk the records the sink has not acknowledged: those that
// found the queue full, and at shutdown those the sink did not take in time.
// It is a JSON-lines file, <data_dir>/audit/<server>.spool, fsynced at every
// append. To deliver it, the writer renames it to <server>.spool.sending (so
// that new spooling goes to a fresh file) and removes that file once every
// record in it was acknowledged; a .sending file left by a crash is delivered
// first at the next start.
type spool struct {
	path    string
	sending string

	mu      *sync.Mutex // shared by every spool of path in the process (see spoolLocks)
	pending bool        // path holds records (as far as this process knows)
	// stuck: a spool file could not be read or removed; it is not tried again
	// in this run (it would be tried in a loop) and its records stay on disk.
	stuck bool
}

func newSpool(dir, server string) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit spool: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, fileName(server)+".spool")
	s := &spool{path: path, sending: path + ".sending", mu: spoolLock(path)}
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		s.pending = true
	}
	return s, nil
}

// spoolLocks hold one lock per spool path: after a configuration reload the
// old server's auditor may still spool while the new one takes the file to
// deliver it, and a record appended to a file being renamed must not be lost.
var spoolLocks sync.Map // path → *sync.Mutex

func spoolLock(path string) *sync.Mutex {
	mu, _ := spoolLocks.LoadOrStore(path, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

// fileName makes a server id safe as a file name.
func fileName(server string) string {
	if server == "" {
		return "default"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, server)
}

// append writes recs to the spool file and fsyncs it.
func (s *spool) append(recs []recordstore.Record) error {
	if len(recs) == 0 {
		return nil
	}
	var buf []byte
	for _, r := range recs {
		buf = append(append(buf, r.JSON...), '\n')
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit spool: %w", err)
	}
	_, err = f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit spool %s: %w", s.path, err)
	}
	s.pending = true
	return nil
}

// hasPending reports whether records wait in the spool.
func (s *spool) hasPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stuck {
		return false
	}
	if s.pending {
		return true
	}
	// Another auditor of the same server (before a reload) may have spooled.
	if fi, err := os.Stat(s.path); err == nil && fi.Size() > 0 {
		s.pending = true
		return true
	}
	_, err := os.Stat(s.sending)
	return err == nil
}

// take returns the file to deliver: a .sending file left by an earlier run, or
// the spool renamed to .sending; "" when nothing waits.
func (s *spool) take() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stuck {
		return "", nil
	}
	if _, err := os.Stat(s.sending); err == nil {
		return s.sending, nil
	}
	if !s.pending {
		return "", nil
	}
	if err := os.Rename(s.path, s.sending); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			s.pending = false
			return "", nil
		}
		return "", fmt.Errorf("audit spool: %w", err)
	}
	s.pending = false
	return s.sending, nil
}

// spoolReader reads a spool file in batches of records.
type spoolReader struct {
	f   *os.File
	r   *bufio.Reader
	bad int // lines that were not a record (a line torn by a crash)
}

func openSpool(path string) (*spoolReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit spool: %w", err)
	}
	return &spoolReader{f: f, r: bufio.NewReaderSize(f, 64<<10)}, nil
}

// next returns up to n records; none at the end of the file.
func (r *spoolReader) next(n int) ([]recordstore.Record, error) {
	var out []recordstore.Record
	for len(out) < n {
		line, err := r.r.ReadBytes('\n')
		if len(line) > 0 {
			if rec, ok := parseSpooled(line); ok {
				out = append(out, rec)
			} else {
				r.bad++
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("audit spool %s: %w", r.f.Name(), err)
		}
	}
	return out, nil
}

func (r *spoolReader) close() { _ = r.f.Close() }

// parseSpooled reads one spooled line back into a record (its id from the JSON).
func parseSpooled(line []byte) (recordstore.Record, bool) {
	line = []byte(strings.TrimSpace(string(line)))
	var head struct {
		ID string `json:"id"`
	}
	if len(line) == 0 || json.Unmarshal(line, &head) != nil || head.ID == "" {
		return recordstore.Record{}, false
	}
	return recordstore.Record{ID: head.ID, JSON: line}, true
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// giveUp marks the spool stuck for the rest of the run.
func (s *spool) giveUp() {
	s.mu.Lock()
	s.stuck = true
	s.mu.Unlock()
}
