package embedded

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"unsafe"

	"github.com/arvenza/helix/internal/rag"
)

// The log is a header followed by records. Since format version 3 each record
// is self-framed:
//
//	marker "\xffHXR" | payload length (uint32 LE) | CRC32-C of payload (uint32 LE) |
//	CRC32-C of the 12 bytes before (uint32 LE) | payload
//
// so that a reader that meets a damaged record (a flipped bit, a torn write, a
// zeroed block) finds the next one by its marker and goes on: one bad record
// costs that record, never its neighbours. The header checksum keeps a damaged
// length from sending the reader far away, and a marker that happens to occur
// inside a payload from being taken for a record.
//
// A payload is a record kind byte and its fields: strings and counts are
// uvarint-length-prefixed, vectors raw little-endian float32s.
//
// Format versions, named by the header:
//
//   - 1 ("HXRAG01"): frames are "length | CRC32-C | payload" (no marker); puts
//     are recPutV1 records, whose chunks have no title field. The pipelines
//     that wrote them kept the document's title in the chunk's metadata
//     ("title"); replaying such a record takes the chunk's Title from there.
//   - 2 ("HXRAG02"): frames as version 1; puts are recPut records, each chunk
//     with its title after its text.
//   - 3 ("HXRAG03"): self-framed records (above), recPut and recDelete.
//
// Versions 1 and 2 are read as they are (a damaged record is skipped by trying
// every following offset for a valid frame) and never rewritten by a read: the
// first write to such a log rewrites it in version 3 (temporary file, fsync,
// rename), like a compaction. The previous versions of Helix refuse a header
// they do not know rather than mistaking the new frames for corruption.
const (
	logMagicV1    = "HXRAG01\n"
	logMagicV2    = "HXRAG02\n"
	logMagic      = "HXRAG03\n"
	logHeaderSize = int64(len(logMagic))

	frameMarker       = "\xffHXR"
	frameHeader       = 16
	legacyFrameHeader = 8
	maxRecordBytes    = 1 << 30

	recPutV1  byte = 1 // format version 1: chunks without a title
	recDelete byte = 2
	recPut    byte = 3 // format version 2 and later: chunks with a title
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// record is one log entry: a document put (its chunks and normalised vectors)
// or a document delete.
type record struct {
	kind    byte
	docID   string
	hash    string
	chunks  []rag.Chunk
	dim     int       // 0: no vectors
	vectors []float32 // dim per chunk
}

// Damage is a stretch of a log that holds no valid record: a record that fails
// its checksum or does not decode, a torn write, bytes that are no record.
type Damage struct {
	Offset int64  // where the stretch begins
	Length int64  // its bytes, up to the next valid record or the file's end
	Reason string // why the first record there was refused
}

// AtEnd reports whether the stretch runs to the end of a file of size bytes (a
// torn tail, typically): no valid record follows it.
func (d Damage) AtEnd(size int64) bool { return d.Offset+d.Length == size }

type logFile struct {
	f    *os.File
	path string
	// size is where the next record goes: the file's size, less a damaged tail
	// once it has been cut.
	size int64
	// legacy is set while the log is of format version 1 or 2: the first write
	// rewrites it in the current format.
	legacy bool
	// validEnd is the end of the last valid record. Bytes after it (a torn
	// tail) are cut before the next append, not when the log is read.
	validEnd int64
	damage   []Damage
}

// logVersion returns the format version a header names, 0 for none.
func logVersion(head string) int {
	switch head {
	case logMagicV1:
		return 1
	case logMagicV2:
		return 2
	case logMagic:
		return 3
	}
	return 0
}

// checkHeader returns the format version of a log's complete header, or an
// error that says what the file is.
func checkHeader(path string, head []byte) (int, error) {
	if v := logVersion(string(head)); v != 0 {
		return v, nil
	}
	if strings.HasPrefix(string(head), "HXRAG") {
		return 0, fmt.Errorf("%s is a Helix RAG store log of a format this version does not know (header %q; this version reads %q, %q and %q): open it with the Helix that wrote it, or re-ingest into another data directory",
			path, strings.TrimSpace(string(head)), strings.TrimSpace(logMagicV1), strings.TrimSpace(logMagicV2), strings.TrimSpace(logMagic))
	}
	return 0, fmt.Errorf("%s is not a Helix RAG store log (unknown header); move it away or use another data directory", path)
}

// tornHeader reports whether head (shorter than a header) is the start of one:
// an empty file, or a creation torn before its header was complete.
func tornHeader(head []byte) bool {
	for _, m := range []string{logMagic, logMagicV2, logMagicV1} {
		if strings.HasPrefix(m, string(head)) {
			return true
		}
	}
	return false
}

// openLog opens (or creates) dir's log and replays its records through apply.
// A damaged stretch is skipped and logged, the records after it replayed; the
// file is not changed (see [logFile.prepareAppend]).
//
// resume, when not 0, is where the replay begins: the records before it are
// already in the index (a saved one, see segment.go), and prior are the
// damaged stretches found before it, reported again.
func openLog(dir string, logger *slog.Logger, resume int64, prior []Damage, apply func(r *record, off, size int64) error) (*logFile, error) {
	path := logPath(dir)
	// A compaction or repair that crashed before its rename leaves a temporary
	// file: the log itself is intact.
	os.Remove(path + ".tmp")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	lf := &logFile{f: f, path: path}
	fail := func(err error) (*logFile, error) {
		f.Close()
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	head := make([]byte, logHeaderSize)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	if int64(n) < logHeaderSize {
		if !tornHeader(head[:n]) {
			return fail(fmt.Errorf("%s is not a Helix RAG store log (unknown header); move it away or use another data directory", path))
		}
		// No record yet: this is the store's creation.
		if err := writeFreshHeader(f, dir); err != nil {
			return fail(err)
		}
		lf.size, lf.validEnd = logHeaderSize, logHeaderSize
		return lf, nil
	}
	version, err := checkHeader(path, head)
	if err != nil {
		return fail(err)
	}
	lf.legacy = version < 3
	lr := &logReader{r: f, size: st.Size(), framed: !lf.legacy}
	if lf.legacy || resume < logHeaderSize || resume > st.Size() {
		resume, prior = logHeaderSize, nil
	}
	lf.damage, lf.validEnd, err = lr.replayFrom(resume, apply)
	lf.damage = append(prior[:len(prior):len(prior)], lf.damage...)
	if err != nil {
		return fail(err)
	}
	for _, d := range lf.damage {
		what := "the records before and after it were kept"
		if d.AtEnd(st.Size()) {
			what = "the records before it were kept (a torn tail is cut at the next write)"
		}
		logger.Error(fmt.Sprintf("store %s: corrupt record at offset %d (%d bytes skipped): %s; %s; the file is left as it is: `helix rag verify` reports the damage, `helix rag repair` rewrites the store without it",
			dir, d.Offset, d.Length, d.Reason, what), "dir", dir, "offset", d.Offset, "skipped_bytes", d.Length)
	}
	lf.size = st.Size()
	return lf, nil
}

func writeFreshHeader(f *os.File, dir string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(logMagic), 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if _, err := f.Seek(logHeaderSize, io.SeekStart); err != nil {
		return err
	}
	return syncDir(dir)
}

// cutDamagedTail drops the bytes after the last valid record when no valid
// record follows them (a torn tail): the next record must not follow garbage.
// Called before a write only, so reading a store never changes its file.
func (l *logFile) cutDamagedTail() error {
	if l.size == l.validEnd {
		return nil
	}
	if len(l.damage) == 0 || !l.damage[len(l.damage)-1].AtEnd(l.size) {
		return nil // the log ends with a valid record: mid-log damage stays until a repair
	}
	if err := l.f.Truncate(l.validEnd); err != nil {
		return fmt.Errorf("cut the torn tail of %s: %w", l.path, err)
	}
	l.size = l.validEnd
	l.damage = l.damage[:len(l.damage)-1]
	return nil
}

// appendFrames writes framed records at the end of the log with one write
// (and one fsync if asked): a group commit. On failure the log is cut back to
// where it was, so none of them is acknowledged and a later append does not
// follow a partial record.
func (l *logFile) appendFrames(buf []byte, sync bool) error {
	if l.legacy {
		return fmt.Errorf("append to %s: the log is of an older format and must be rewritten first", l.path)
	}
	if err := l.cutDamagedTail(); err != nil {
		return err
	}
	if err := writeAt(l.f, buf, l.size); err != nil {
		l.rollback()
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	if sync {
		if err := syncFile(l.f); err != nil {
			l.rollback()
			return fmt.Errorf("sync %s: %w", l.path, err)
		}
	}
	l.size += int64(len(buf))
	l.validEnd = l.size
	return nil
}

// writeAt and syncFile are the log's writes and fsyncs, variables so that
// tests can make them fail.
var (
	writeAt = func(f *os.File, b []byte, off int64) error {
		_, err := f.WriteAt(b, off)
		return err
	}
	syncFile = func(f *os.File) error { return f.Sync() }
)

func (l *logFile) rollback() {
	l.f.Truncate(l.size)
}

func (l *logFile) close() error {
	err := l.f.Sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// rewriteLog writes recs to a fresh log and atomically replaces old with it,
// returning the new log and each record's size. When it returns a log, old is
// closed and the log replaces it, even if an error (about durability) comes too.
func rewriteLog(dir string, old *logFile, recs []*record, sync bool) (*logFile, []int64, error) {
	tmp := old.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*logFile, []int64, error) {
		f.Close()
		os.Remove(tmp)
		return nil, nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(logMagic)
	size := logHeaderSize
	sizes := make([]int64, len(recs))
	var buf []byte
	for i, r := range recs {
		buf = encodeFrame(buf[:0], r)
		if _, err := w.Write(buf); err != nil {
			return fail(err)
		}
		sizes[i] = int64(len(buf))
		size += sizes[i]
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	// The rename must not become visible before the data it names.
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, old.path); err != nil {
		return fail(err)
	}
	old.f.Close()
	lf := &logFile{f: f, path: old.path, size: size, validEnd: size}
	if sync {
		if err := syncDir(dir); err != nil {
			// The rename happened, so the new log is the one to append to; only
			// the rename's durability is in doubt.
			return lf, sizes, fmt.Errorf("sync directory %s after replacing the log: %w", dir, err)
		}
	}
	return lf, sizes, nil
}

// logReader reads a log's records through a window of the file, so that both
// the replay (sequential) and the search for the next record after damage
// (forward scans) need few system calls.
type logReader struct {
	r      io.ReaderAt
	size   int64
	framed bool // format version 3: frames begin with frameMarker
	win    []byte
	winOff int64
}

const readWindow = 1 << 20

// at returns the n bytes at off, valid until the next call.
func (lr *logReader) at(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > lr.size {
		return nil, io.ErrUnexpectedEOF
	}
	if off >= lr.winOff && off+n <= lr.winOff+int64(len(lr.win)) {
		return lr.win[off-lr.winOff : off-lr.winOff+n], nil
	}
	if n > readWindow {
		b := make([]byte, n)
		if k, err := lr.r.ReadAt(b, off); int64(k) < n {
			return nil, fmt.Errorf("read at offset %d: %w", off, err)
		}
		return b, nil
	}
	m := min(int64(readWindow), lr.size-off)
	if int64(cap(lr.win)) < m {
		// No bigger than the file's rest: reading one record (a hit's) takes
		// a buffer of its size, not a window.
		lr.win = make([]byte, m)
	}
	lr.win = lr.win[:m]
	if k, err := lr.r.ReadAt(lr.win, off); int64(k) < m {
		lr.win = lr.win[:0]
		return nil, fmt.Errorf("read at offset %d: %w", off, err)
	}
	lr.winOff = off
	return lr.win[:n], nil
}

func (lr *logReader) headerSize() int64 {
	if lr.framed {
		return frameHeader
	}
	return legacyFrameHeader
}

// frameAt reads the record at off. A record that is not valid there gives a
// reason (and no error); err is for reads that fail.
func (lr *logReader) frameAt(off int64) (r *record, size int64, reason, err error) {
	hs := lr.headerSize()
	if off+hs > lr.size {
		return nil, 0, errors.New("the record's header is cut short (a write torn by a crash)"), nil
	}
	h, err := lr.at(off, hs)
	if err != nil {
		return nil, 0, nil, err
	}
	var length int64
	var sum uint32
	if lr.framed {
		if string(h[:4]) != frameMarker {
			return nil, 0, errors.New("no record begins here (its marker is missing)"), nil
		}
		if crc32.Checksum(h[:12], crcTable) != binary.LittleEndian.Uint32(h[12:]) {
			return nil, 0, errors.New("the record's header fails its checksum"), nil
		}
		length, sum = int64(binary.LittleEndian.Uint32(h[4:])), binary.LittleEndian.Uint32(h[8:])
	} else {
		length, sum = int64(binary.LittleEndian.Uint32(h)), binary.LittleEndian.Uint32(h[4:])
	}
	if length > maxRecordBytes {
		return nil, 0, fmt.Errorf("the record claims %d bytes, more than any record holds", length), nil
	}
	if off+hs+length > lr.size {
		return nil, 0, fmt.Errorf("the record claims %d bytes but the file ends first (a write torn by a crash)", length), nil
	}
	payload, err := lr.at(off+hs, length)
	if err != nil {
		return nil, 0, nil, err
	}
	if crc32.Checksum(payload, crcTable) != sum {
		return nil, 0, errors.New("checksum mismatch"), nil
	}
	// decodeRecord copies what it keeps: payload may be the read window.
	r, reason = decodeRecord(payload)
	if reason != nil {
		return nil, 0, reason, nil
	}
	return r, hs + length, nil, nil
}

// resync returns the offset of the first valid record after from, or the
// file's size when none follows.
func (lr *logReader) resync(from int64) (int64, error) {
	if lr.framed {
		return lr.resyncFramed(from)
	}
	return lr.resyncLegacy(from)
}

// resyncFramed looks for the next record marker that starts a valid record.
func (lr *logReader) resyncFramed(from int64) (int64, error) {
	p := from + 1
	for p+frameHeader <= lr.size {
		n := min(int64(readWindow), lr.size-p)
		w, err := lr.at(p, n)
		if err != nil {
			return 0, err
		}
		i := bytes.Index(w, []byte(frameMarker))
		if i < 0 {
			// The marker may straddle the window's end: look again from there.
			p += max(n-int64(len(frameMarker))+1, 1)
			continue
		}
		cand := p + int64(i)
		_, _, reason, err := lr.frameAt(cand)
		if err != nil {
			return 0, err
		}
		if reason == nil {
			return cand, nil
		}
		p = cand + 1
	}
	return lr.size, nil
}

// resyncLegacy tries every offset: frames of versions 1 and 2 have no marker.
// Cheap tests (a length that fits, a known record kind) come before the
// checksum, so a scan costs little more than reading the bytes.
func (lr *logReader) resyncLegacy(from int64) (int64, error) {
	for p := from + 1; p+legacyFrameHeader < lr.size; p++ {
		h, err := lr.at(p, legacyFrameHeader+1)
		if err != nil {
			return 0, err
		}
		length := int64(binary.LittleEndian.Uint32(h))
		if kind := h[legacyFrameHeader]; length < 2 || p+legacyFrameHeader+length > lr.size || (kind != recPutV1 && kind != recPut && kind != recDelete) {
			continue
		}
		_, _, reason, err := lr.frameAt(p)
		if err != nil {
			return 0, err
		}
		if reason == nil {
			return p, nil
		}
	}
	return lr.size, nil
}

// replay reads every valid record after the header through visit, in order,
// and returns the damaged stretches skipped and the end of the last valid
// record. A record visit refuses counts as damage.
func (lr *logReader) replay(visit func(r *record, off, size int64) error) ([]Damage, int64, error) {
	return lr.replayFrom(logHeaderSize, visit)
}

// replayFrom is replay from offset start, a record's beginning.
func (lr *logReader) replayFrom(start int64, visit func(r *record, off, size int64) error) ([]Damage, int64, error) {
	var damage []Damage
	off, validEnd := start, start
	for off < lr.size {
		r, size, reason, err := lr.frameAt(off)
		if err != nil {
			return nil, 0, err
		}
		if reason == nil {
			if reason = visit(r, off, size); reason == nil {
				off += size
				validEnd = off
				continue
			}
		}
		next, err := lr.resync(off)
		if err != nil {
			return nil, 0, err
		}
		damage = append(damage, Damage{Offset: off, Length: next - off, Reason: reason.Error()})
		off = next
	}
	return damage, validEnd, nil
}

// encodeFrame appends r's framed encoding (format version 3) to buf.
func encodeFrame(buf []byte, r *record) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeader)...)
	buf = encodePayload(buf, r)
	payload := buf[start+frameHeader:]
	h := buf[start : start+frameHeader]
	copy(h, frameMarker)
	binary.LittleEndian.PutUint32(h[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint32(h[12:], crc32.Checksum(h[:12], crcTable))
	return buf
}

// encodePayload appends r's payload to buf.
func encodePayload(buf []byte, r *record) []byte {
	buf = append(buf, r.kind)
	buf = appendString(buf, r.docID)
	if r.kind == recPut {
		buf = appendString(buf, r.hash)
		buf = binary.AppendUvarint(buf, uint64(len(r.chunks)))
		buf = binary.AppendUvarint(buf, uint64(r.dim))
		for i := range r.chunks {
			c := &r.chunks[i]
			buf = appendString(buf, c.ID)
			buf = binary.AppendVarint(buf, int64(c.Index))
			buf = appendString(buf, c.Text)
			buf = appendString(buf, c.Title)
			buf = binary.AppendVarint(buf, int64(c.Start))
			buf = binary.AppendVarint(buf, int64(c.End))
			buf = binary.AppendUvarint(buf, uint64(len(c.Headings)))
			for _, h := range c.Headings {
				buf = appendString(buf, h)
			}
			buf = binary.AppendUvarint(buf, uint64(len(c.Metadata)))
			for k, v := range c.Metadata {
				buf = appendString(buf, k)
				buf = appendValue(buf, v)
			}
			if r.dim > 0 {
				for _, x := range r.vectors[i*r.dim : (i+1)*r.dim] {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
				}
			}
		}
	}
	return buf
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// Metadata value tags. Values keep their Go type across a restart for the
// types metadata holds (strings, numbers, booleans); anything else goes through
// JSON.
const (
	tagNil byte = iota
	tagString
	tagInt
	tagFloat
	tagBool
	tagJSON
)

func appendValue(buf []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(buf, tagNil)
	case string:
		return appendString(append(buf, tagString), x)
	case int:
		return binary.AppendVarint(append(buf, tagInt), int64(x))
	case int64:
		return binary.AppendVarint(append(buf, tagInt), x)
	case int32:
		return binary.AppendVarint(append(buf, tagInt), int64(x))
	case float64:
		return binary.LittleEndian.AppendUint64(append(buf, tagFloat), math.Float64bits(x))
	case float32:
		return binary.LittleEndian.AppendUint64(append(buf, tagFloat), math.Float64bits(float64(x)))
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		return append(buf, tagBool, b)
	default:
		j, err := json.Marshal(x)
		if err != nil {
			j = []byte(fmt.Sprintf("%q", fmt.Sprint(x)))
		}
		return appendString(append(buf, tagJSON), string(j))
	}
}

// decoder reads a payload; the first error sticks, so callers check once.
type decoder struct {
	b   []byte
	err error
	// alias makes strings share the payload's bytes rather than copy them:
	// for payloads that are themselves strings, never changed.
	alias bool
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail("the record ends early")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad number in the record")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad number in the record")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items each taking at least minBytes, refusing counts
// the rest of the record cannot hold (no huge allocation from a bad byte).
func (d *decoder) count(minBytes int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/max(minBytes, 1)) {
		d.fail("a count of %d does not fit in the record", n)
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("a string of %d bytes does not fit in the record", n)
		return ""
	}
	var s string
	if d.alias {
		s = unsafe.String(unsafe.SliceData(d.b), int(n))
	} else {
		s = string(d.b[:n])
	}
	d.b = d.b[n:]
	return s
}

func (d *decoder) uint64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.fail("the record ends early")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) value() any {
	switch tag := d.byte(); tag {
	case tagNil:
		return nil
	case tagString:
		return d.string()
	case tagInt:
		return int(d.varint())
	case tagFloat:
		return math.Float64frombits(d.uint64())
	case tagBool:
		return d.byte() == 1
	case tagJSON:
		var v any
		if err := json.Unmarshal([]byte(d.string()), &v); err != nil {
			d.fail("bad metadata value: %v", err)
		}
		return v
	default:
		d.fail("unknown metadata value type %d", tag)
		return nil
	}
}

func decodeRecord(payload []byte) (*record, error) {
	d := &decoder{b: payload}
	r := &record{kind: d.byte()}
	r.docID = d.string()
	switch r.kind {
	case recDelete:
	case recPut, recPutV1:
		titled := r.kind == recPut
		r.kind = recPut // in memory, a put is a put whatever its format
		r.hash = d.string()
		n := d.count(6)
		dim := d.uvarint()
		if d.err == nil && dim > 0 && (dim > uint64(len(d.b)/4) || uint64(n)*dim > uint64(len(d.b)/4)) {
			d.fail("%d vectors of %d dimensions do not fit in the record", n, dim)
		}
		if d.err != nil {
			return nil, d.err
		}
		r.dim = int(dim)
		r.chunks = make([]rag.Chunk, n)
		if r.dim > 0 {
			r.vectors = make([]float32, 0, n*r.dim)
		}
		for i := 0; i < n && d.err == nil; i++ {
			c := &r.chunks[i]
			c.DocID = r.docID
			c.ID = d.string()
			c.Index = int(d.varint())
			c.Text = d.string()
			if titled {
				c.Title = d.string()
			}
			c.Start = int(d.varint())
			c.End = int(d.varint())
			if nh := d.count(1); nh > 0 {
				c.Headings = make([]string, nh)
				for j := range c.Headings {
					c.Headings[j] = d.string()
				}
			}
			if nm := d.count(2); nm > 0 {
				c.Metadata = make(map[string]any, nm)
				for range nm {
					k := d.string()
					c.Metadata[k] = d.value()
				}
			}
			if !titled {
				// Version 1: the pipeline kept the title in the metadata only.
				c.Title, _ = c.Metadata["title"].(string)
			}
			if r.dim > 0 {
				if d.err == nil && len(d.b) < 4*r.dim {
					d.fail("the record ends early")
				}
				if d.err != nil {
					break
				}
				for j := range r.dim {
					r.vectors = append(r.vectors, math.Float32frombits(binary.LittleEndian.Uint32(d.b[4*j:])))
				}
				d.b = d.b[4*r.dim:]
			}
		}
	default:
		d.fail("unknown record type %d", r.kind)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d unexpected bytes at the record's end", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}
