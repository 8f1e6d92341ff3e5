package embedded

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// fiveDocs fills a store in dir with d0…d4 (two chunks each) and returns the
// log's size after each put: record i spans ends[i-1] to ends[i].
func fiveDocs(t *testing.T, dir string) []int64 {
	t.Helper()
	s, _ := open(t, dir, Options{})
	c := newCorpus(4, 4)
	var ends []int64
	for i := range 5 {
		hash, cs, vecs := c.doc(fmt.Sprintf("d%d", i), 2)
		mustPut(t, s, fmt.Sprintf("d%d", i), hash, cs, vecs)
		st, _ := os.Stat(logPath(dir))
		ends = append(ends, st.Size())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return ends
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func damage(t *testing.T, path string, change func(b []byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, change(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

func docIDs(t *testing.T, s *Store) []string {
	t.Helper()
	docs, err := s.Documents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for id := range docs {
		out = append(out, id)
	}
	return sortedCopy(out)
}

func sortedCopy(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// openReadOnly opens the store, runs a search and closes it: what a query
// command does.
func openReadOnly(t *testing.T, dir string) ([]string, string) {
	t.Helper()
	s, logs := open(t, dir, Options{})
	ids := docIDs(t, s)
	if _, err := s.SearchKeyword(ctx, "common", 100, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return ids, logs.String()
}

func TestCorruptRecordInTheMiddleKeepsItsNeighbours(t *testing.T) {
	for name, change := range map[string]func(ends []int64) func([]byte) []byte{
		"flipped payload byte": func(ends []int64) func([]byte) []byte {
			return func(b []byte) []byte { b[(ends[1]+ends[2])/2] ^= 0x5a; return b }
		},
		"huge length": func(ends []int64) func([]byte) []byte {
			return func(b []byte) []byte {
				binary.LittleEndian.PutUint32(b[ends[1]+4:], 0xfffffff0)
				return b
			}
		},
		"length one short": func(ends []int64) func([]byte) []byte {
			return func(b []byte) []byte {
				n := binary.LittleEndian.Uint32(b[ends[1]+4:])
				binary.LittleEndian.PutUint32(b[ends[1]+4:], n-1)
				return b
			}
		},
		"zeroed record": func(ends []int64) func([]byte) []byte {
			return func(b []byte) []byte { clear(b[ends[1]:ends[2]]); return b }
		},
		"garbage inserted": func(ends []int64) func([]byte) []byte {
			return func(b []byte) []byte {
				return append(append(append([]byte(nil), b[:ends[1]]...), bytes.Repeat([]byte{0xff, 'H', 'X'}, 1000)...), b[ends[1]:]...)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ends := fiveDocs(t, dir)
			damage(t, logPath(dir), change(ends))
			before := fileSum(t, logPath(dir))
			got, logs := openReadOnly(t, dir)
			want := []string{"d0", "d1", "d3", "d4"}
			if name == "garbage inserted" {
				want = []string{"d0", "d1", "d2", "d3", "d4"}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("documents after a damaged record: %v, want %v", got, want)
			}
			if w := fmt.Sprintf("corrupt record at offset %d", ends[1]); !strings.Contains(logs, w) || !strings.Contains(logs, "helix rag repair") {
				t.Fatalf("log %q lacks %q and the way to repair", logs, w)
			}
			if fileSum(t, logPath(dir)) != before {
				t.Fatal("opening and searching the store rewrote its log")
			}
		})
	}
}

func TestTornTailIsKeptOnReadAndCutOnWrite(t *testing.T) {
	dir := t.TempDir()
	ends := fiveDocs(t, dir)
	if err := os.Truncate(logPath(dir), ends[4]-7); err != nil {
		t.Fatal(err)
	}
	before := fileSum(t, logPath(dir))
	got, logs := openReadOnly(t, dir)
	if !reflect.DeepEqual(got, []string{"d0", "d1", "d2", "d3"}) {
		t.Fatalf("documents after a torn tail: %v", got)
	}
	if !strings.Contains(logs, fmt.Sprintf("offset %d", ends[3])) {
		t.Fatalf("log %q does not name the torn record's offset %d", logs, ends[3])
	}
	if fileSum(t, logPath(dir)) != before {
		t.Fatal("opening the store cut its torn tail: a read must not write")
	}
	// The next write cuts the torn bytes (no valid record is among them) and
	// lands where they began.
	s, _ := open(t, dir, Options{})
	mustPut(t, s, "d9", "h", chunks("d9", nil, "common words"), nil)
	s.Close()
	if st, _ := os.Stat(logPath(dir)); st.Size() <= ends[3] || st.Size() >= ends[4] {
		t.Fatalf("after a put the log is %d bytes; the torn record began at %d", st.Size(), ends[3])
	}
	got, logs = openReadOnly(t, dir)
	if !reflect.DeepEqual(got, []string{"d0", "d1", "d2", "d3", "d9"}) || logs != "" {
		t.Fatalf("after the write: %v, logs %q", got, logs)
	}
}

func TestWriteAfterCorruptionKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	ends := fiveDocs(t, dir)
	damage(t, logPath(dir), func(b []byte) []byte { b[(ends[1]+ends[2])/2] ^= 1; return b })
	s, _ := open(t, dir, Options{})
	mustPut(t, s, "d9", "h", chunks("d9", nil, "common words"), nil)
	s.Close()
	got, _ := openReadOnly(t, dir)
	if !reflect.DeepEqual(got, []string{"d0", "d1", "d3", "d4", "d9"}) {
		t.Fatalf("documents after a write to a damaged store: %v", got)
	}
}

func TestVerifyAndRepair(t *testing.T) {
	dir := t.TempDir()
	ends := fiveDocs(t, dir)

	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Damage) != 0 || rep.Records != 5 || rep.Documents != 5 || rep.Size != ends[4] {
		t.Fatalf("verify of a clean store: %+v", rep)
	}

	damage(t, logPath(dir), func(b []byte) []byte { b[(ends[1]+ends[2])/2] ^= 1; return b })
	before := fileSum(t, logPath(dir))
	rep, err = Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Damage) != 1 || rep.Damage[0].Offset != ends[1] || rep.Damage[0].Length != ends[2]-ends[1] ||
		!strings.Contains(rep.Damage[0].Reason, "checksum") || rep.Records != 4 {
		t.Fatalf("verify of a damaged store: %+v", rep)
	}
	if fileSum(t, logPath(dir)) != before {
		t.Fatal("verify changed the log")
	}

	res, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Rewritten || res.Kept != 4 || res.Backup == "" {
		t.Fatalf("repair: %+v", res)
	}
	if b, err := os.ReadFile(res.Backup); err != nil || sha256.Sum256(b) != before {
		t.Fatalf("the backup of the damaged log is not the damaged log: %v", err)
	}
	if _, err := os.Stat(logPath(dir) + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("repair left its temporary file: %v", err)
	}
	rep, err = Verify(dir)
	if err != nil || len(rep.Damage) != 0 || rep.Records != 4 {
		t.Fatalf("verify after repair: %+v, %v", rep, err)
	}
	got, logs := openReadOnly(t, dir)
	if !reflect.DeepEqual(got, []string{"d0", "d1", "d3", "d4"}) || logs != "" {
		t.Fatalf("after repair: %v, logs %q", got, logs)
	}
	// A clean store needs no repair: the log is left as it is.
	sum := fileSum(t, logPath(dir))
	if res, err := Repair(dir); err != nil || res.Rewritten {
		t.Fatalf("repair of a clean store: %+v, %v", res, err)
	}
	if fileSum(t, logPath(dir)) != sum {
		t.Fatal("repair of a clean store rewrote it")
	}
}

func TestVerifyRefusesWhatIsNotAStore(t *testing.T) {
	if _, err := Verify(filepath.Join(t.TempDir(), "nothing")); err == nil || !strings.Contains(err.Error(), "no RAG store") {
		t.Fatalf("verify of a missing directory: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(logPath(dir), []byte("not a log at all"), 0o644)
	if _, err := Verify(dir); err == nil || !strings.Contains(err.Error(), "not a Helix RAG store log") {
		t.Fatalf("verify of a foreign file: %v", err)
	}
	s, _ := open(t, t.TempDir(), Options{})
	if _, err := Verify(s.Dir()); err == nil || !strings.Contains(err.Error(), "already open") {
		t.Fatalf("verify of an open store: %v", err)
	}
}

// legacyLog writes a version 2 log (frames without a marker) of five documents
// and returns each record's end.
func legacyLog(t *testing.T, dir string) []int64 {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(logMagicV2)
	var ends []int64
	for i := range 5 {
		id := fmt.Sprintf("d%d", i)
		payload := encodePayload(nil, &record{kind: recPut, docID: id, hash: "h" + id,
			chunks: []rag.Chunk{{ID: id + "#0", DocID: id, Text: "common legacy text " + id}}})
		var frame [8]byte
		binary.LittleEndian.PutUint32(frame[:4], uint32(len(payload)))
		binary.LittleEndian.PutUint32(frame[4:], crc32.Checksum(payload, crcTable))
		b.Write(frame[:])
		b.Write(payload)
		ends = append(ends, int64(b.Len()))
	}
	if err := os.WriteFile(logPath(dir), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return ends
}

func TestLegacyLogResyncsAndMigratesOnWrite(t *testing.T) {
	dir := t.TempDir()
	ends := legacyLog(t, dir)
	damage(t, logPath(dir), func(b []byte) []byte { b[ends[1]+12] ^= 0x40; return b })
	before := fileSum(t, logPath(dir))
	got, logs := openReadOnly(t, dir)
	if !reflect.DeepEqual(got, []string{"d0", "d1", "d3", "d4"}) {
		t.Fatalf("documents of a damaged version 2 log: %v", got)
	}
	if !strings.Contains(logs, fmt.Sprintf("corrupt record at offset %d", ends[1])) {
		t.Fatalf("log %q", logs)
	}
	if fileSum(t, logPath(dir)) != before {
		t.Fatal("opening a version 2 log rewrote it")
	}
	s, _ := open(t, dir, Options{})
	mustPut(t, s, "d9", "h", chunks("d9", nil, "common words"), nil)
	s.Close()
	b, _ := os.ReadFile(logPath(dir))
	if !bytes.HasPrefix(b, []byte(logMagic)) {
		t.Fatalf("after a write the log is not of the current format: %q", b[:8])
	}
	got, logs = openReadOnly(t, dir)
	if !reflect.DeepEqual(got, []string{"d0", "d1", "d3", "d4", "d9"}) || logs != "" {
		t.Fatalf("after the migration: %v, logs %q", got, logs)
	}
}

// TestRandomDamageCostsOnlyTheDamagedRecords damages random records of a log
// of twenty documents in random ways: every document whose record was not
// touched is read back, and reading changes nothing.
func TestRandomDamageCostsOnlyTheDamagedRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for round := range 20 {
		dir := t.TempDir()
		s, _ := open(t, dir, Options{NoSync: true})
		c := newCorpus(uint64(round), 3)
		ends := []int64{logHeaderSize}
		for i := range 20 {
			hash, cs, vecs := c.doc(fmt.Sprintf("d%02d", i), 1+i%3)
			mustPut(t, s, fmt.Sprintf("d%02d", i), hash, cs, vecs)
			st, _ := os.Stat(logPath(dir))
			ends = append(ends, st.Size())
		}
		s.Close()
		hit := map[int]bool{}
		damage(t, logPath(dir), func(b []byte) []byte {
			for range 1 + rng.IntN(4) {
				i := rng.IntN(20)
				hit[i] = true
				start, end := ends[i], ends[i+1]
				switch rng.IntN(3) {
				case 0: // flipped bytes
					for range 1 + rng.IntN(8) {
						b[start+rng.Int64N(end-start)] ^= byte(1 + rng.IntN(255))
					}
				case 1: // a zeroed block
					from := start + rng.Int64N(end-start)
					clear(b[from:min(end, from+1+rng.Int64N(64))])
				case 2: // random bytes over the record's header
					for k := start; k < min(end, start+frameHeader); k++ {
						b[k] = byte(rng.IntN(256))
					}
				}
			}
			return b
		})
		before := fileSum(t, logPath(dir))
		got, _ := openReadOnly(t, dir)
		var want []string
		for i := range 20 {
			if !hit[i] {
				want = append(want, fmt.Sprintf("d%02d", i))
			}
		}
		for _, id := range want {
			if !slices.Contains(got, id) {
				t.Fatalf("round %d: %s was not damaged but is gone (damaged %v, read %v)", round, id, hit, got)
			}
		}
		if fileSum(t, logPath(dir)) != before {
			t.Fatalf("round %d: reading changed the log", round)
		}
		rep, err := Verify(dir)
		if err != nil || rep.Records != len(got) {
			t.Fatalf("round %d: verify %+v, %v; open read %d documents", round, rep, err, len(got))
		}
	}
}

// FuzzReplay feeds arbitrary bytes after a header: the replay never fails or
// panics, and its valid records and damaged stretches cover the file exactly.
func FuzzReplay(f *testing.F) {
	dir := f.TempDir()
	s, _ := open(f, dir, Options{NoSync: true})
	mustPut(f, s, "a", "1", chunks("a", map[string]any{"k": 1}, "one", "two"), [][]float32{{1, 0}, {0, 1}})
	mustPut(f, s, "b", "2", chunks("b", nil, "three"), [][]float32{{1, 1}})
	s.Close()
	b, _ := os.ReadFile(logPath(dir))
	f.Add(b[logHeaderSize:], true)
	f.Add(b[logHeaderSize:len(b)-3], true)
	f.Add([]byte(frameMarker+frameMarker), false)
	f.Fuzz(func(t *testing.T, body []byte, framed bool) {
		head := logMagicV2
		if framed {
			head = logMagic
		}
		data := append([]byte(head), body...)
		lr := &logReader{r: bytes.NewReader(data), size: int64(len(data)), framed: framed}
		type span struct{ off, size int64 }
		var spans []span
		damage, _, err := lr.replay(func(r *record, off, size int64) error {
			spans = append(spans, span{off, size})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range damage {
			spans = append(spans, span{d.Offset, d.Length})
		}
		slices.SortFunc(spans, func(a, b span) int { return int(a.off - b.off) })
		at := logHeaderSize
		for _, sp := range spans {
			if sp.off != at || sp.size <= 0 {
				t.Fatalf("spans %v do not cover the file contiguously from %d", spans, at)
			}
			at += sp.size
		}
		if at != int64(len(data)) {
			t.Fatalf("spans %v end at %d, the file at %d", spans, at, len(data))
		}
	})
}
