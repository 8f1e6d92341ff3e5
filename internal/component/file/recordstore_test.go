package file_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/component/file"
	"github.com/arvenza/helix/internal/recordstore"
	"github.com/arvenza/helix/pkg/uri"
)

func openRecords(t *testing.T, raw string, o recordstore.Options) recordstore.Store {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := file.New(nil).OpenRecordStore(u, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// Records are appended as JSON lines, to the file the address names or the
// fileName= in the directory it names; a second store appends after the first.
func TestRecordStoreAppendsJSONLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "logs", "audit.jsonl")
	o := recordstore.Options{MaxFileBytes: 1 << 20, KeepFiles: 2}
	s := openRecords(t, "file://"+filepath.ToSlash(path), o)
	if err := s.Write(context.Background(), []recordstore.Record{{ID: "1", JSON: []byte(`{"id":"1"}`)}, {ID: "2", JSON: []byte(`{"id":"2"}`)}}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close(context.Background())
	s2 := openRecords(t, "file://"+filepath.ToSlash(filepath.Join(dir, "logs"))+"?fileName=audit.jsonl", o)
	if err := s2.Write(context.Background(), []recordstore.Record{{ID: "3", JSON: []byte(`{"id":"3"}`)}}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines(t, path), " ")
	if got != `{"id":"1"} {"id":"2"} {"id":"3"}` {
		t.Errorf("file holds %s", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600 (records are for auditors)", fi.Mode().Perm())
	}
}

// The file rotates before it grows past MaxFileBytes, keeping KeepFiles older
// files; the newest records are in the kept files, in order.
func TestRecordStoreRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s := openRecords(t, "file://"+filepath.ToSlash(path), recordstore.Options{MaxFileBytes: 100, KeepFiles: 2})
	for i := range 30 {
		// Batches of 3 records of 22 bytes each (23 with the newline).
		var batch []recordstore.Record
		for j := range 3 {
			id := fmt.Sprintf("%04d", i*3+j)
			batch = append(batch, recordstore.Record{ID: id, JSON: []byte(`{"id":"` + id + `","x":"ab"}`)})
		}
		if err := s.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for _, p := range []string{path + ".2", path + ".1", path} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if fi.Size() > 100 {
			t.Errorf("%s has %d bytes, more than the 100 allowed", p, fi.Size())
		}
		all = append(all, lines(t, p)...)
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("a third rotated file is kept (%v); keep_files is 2", err)
	}
	// 4 records fit in a file: of 90 records the newest file holds the last 2,
	// the two rotated ones the 8 before them, in order.
	if len(all) != 10 || !strings.Contains(all[0], `"0080"`) || !strings.Contains(all[9], `"0089"`) {
		t.Errorf("kept records: %v", all)
	}
}

func TestRecordStoreRefusesBadAddresses(t *testing.T) {
	dir := t.TempDir()
	for raw, want := range map[string]string{
		"file://" + filepath.ToSlash(dir): "is a directory",
		"file:///":                        "name the file",
		"file://" + filepath.ToSlash(dir) + "/a.jsonl?delete=true": "option delete does not apply",
	} {
		u, _ := uri.Parse(raw)
		_, err := file.New(nil).OpenRecordStore(u, recordstore.Options{MaxFileBytes: 10})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
}
