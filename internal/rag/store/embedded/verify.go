package embedded

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Report is what [Verify] found in a store's log.
type Report struct {
	Path      string // the log file
	Format    int    // its format version (0: no header yet)
	Size      int64  // its bytes
	Records   int    // valid records
	Documents int    // documents live after replaying them
	Damage    []Damage
}

// RepairResult is what [Repair] did.
type RepairResult struct {
	Report           // of the log before the repair
	Rewritten bool   // false when there was no damage: the log was left alone
	Kept      int    // valid records written to the new log
	Backup    string // the damaged log, kept under this name
}

// Verify reads the log of the store in dir, without changing anything, and
// reports its valid records and damaged stretches. It takes the store's lock:
// a store open elsewhere is refused.
func Verify(dir string) (Report, error) {
	var rep Report
	err := withLockedLog(dir, func(f *os.File, size int64) error {
		var err error
		rep, err = verifyLog(f, size, nil)
		return err
	})
	return rep, err
}

// Repair rewrites the log of the store in dir without its damaged stretches,
// keeping every valid record in order (in the current format). The new log is
// written to a temporary file, fsynced and renamed over the old one; the old
// one stays next to it as chunks.log.damaged-<time> (a hard link, taken before
// the rename). A log without damage is left as it is.
func Repair(dir string) (RepairResult, error) {
	var res RepairResult
	err := withLockedLog(dir, func(f *os.File, size int64) error {
		rep, err := verifyLog(f, size, nil)
		res.Report = rep
		if err != nil || len(rep.Damage) == 0 {
			return err
		}
		res.Kept, res.Backup, err = rewriteValid(dir, f, size)
		res.Rewritten = err == nil
		return err
	})
	return res, err
}

// withLockedLog locks the store in dir and runs fn on its log, opened read-only.
func withLockedLog(dir string, fn func(f *os.File, size int64) error) error {
	path := logPath(dir)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no RAG store in %s (it has no %s): give the store's directory (rag-store path, default <data_dir>/rag/<pipeline id>)", dir, "chunks.log")
		}
		return fmt.Errorf("store %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlockDir(lock)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("store %s: %w", dir, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("store %s: %w", dir, err)
	}
	return fn(f, st.Size())
}

// verifyLog replays the log in f the way Open does (the same framing, the same
// dimension rule), passing each valid record to keep when it is not nil.
func verifyLog(f *os.File, size int64, keep func(r *record) error) (Report, error) {
	rep := Report{Path: f.Name(), Size: size}
	head := make([]byte, logHeaderSize)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return rep, err
	}
	if int64(n) < logHeaderSize {
		if !tornHeader(head[:n]) {
			return rep, fmt.Errorf("%s is not a Helix RAG store log (unknown header); move it away or use another data directory", f.Name())
		}
		if n > 0 {
			rep.Damage = []Damage{{Offset: 0, Length: int64(n), Reason: "the header is cut short (a store whose creation was torn by a crash)"}}
		}
		return rep, nil
	}
	if rep.Format, err = checkHeader(f.Name(), head); err != nil {
		return rep, err
	}
	docs := map[string]bool{}
	dim := 0
	lr := &logReader{r: f, size: size, framed: rep.Format >= 3}
	rep.Damage, _, err = lr.replay(func(r *record, _, _ int64) error {
		if r.kind == recPut && r.dim > 0 {
			if dim > 0 && r.dim != dim {
				return fmt.Errorf("put %q: vectors have %d dimensions, the store holds %d-dimensional vectors", r.docID, r.dim, dim)
			}
			dim = r.dim
		}
		if keep != nil {
			if err := keep(r); err != nil {
				return err
			}
		}
		rep.Records++
		docs[r.docID] = r.kind == recPut
		return nil
	})
	for _, live := range docs {
		if live {
			rep.Documents++
		}
	}
	return rep, err
}

// rewriteValid writes the valid records of the log in f to a new log and puts
// it in the old one's place, keeping the old one as a backup.
func rewriteValid(dir string, f *os.File, size int64) (kept int, backup string, err error) {
	path := logPath(dir)
	tmp := path + ".tmp"
	out, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, "", fmt.Errorf("store %s: %w", dir, err)
	}
	defer func() {
		out.Close()
		if err != nil {
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(out, 1<<20)
	w.WriteString(logMagic)
	var buf []byte
	var writeErr error
	_, err = verifyLog(f, size, func(r *record) error {
		buf = encodeFrame(buf[:0], r)
		if _, err := w.Write(buf); err != nil {
			writeErr = err
			return err
		}
		kept++
		return nil
	})
	if err == nil {
		err = writeErr
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = out.Sync()
	}
	if err != nil {
		return 0, "", fmt.Errorf("store %s: write the repaired log: %w", dir, err)
	}
	backup = fmt.Sprintf("%s.damaged-%s", path, time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err = os.Link(path, backup); err != nil {
		return 0, "", fmt.Errorf("store %s: keep the damaged log as %s: %w (nothing was changed)", dir, backup, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		os.Remove(backup)
		return 0, "", fmt.Errorf("store %s: replace the log: %w (nothing was changed)", dir, err)
	}
	// The saved index covers the damaged log: the next open rebuilds it.
	os.Remove(segmentPath(dir))
	if err = syncDir(dir); err != nil {
		return kept, backup, fmt.Errorf("store %s: sync the directory after replacing the log: %w", dir, err)
	}
	return kept, backup, nil
}
