package embedded

import (
	"bufio"
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

	"github.com/arvenza/helix/pkg/rag"
)

// The log is a header followed by records, each framed as
//
//	payload length (uint32 LE) | CRC32-C of payload (uint32 LE) | payload
//
// A payload is a record kind byte and its fields: strings and counts are
// uvarint-length-prefixed, vectors raw little-endian float32s.
//
// Format versions, named by the header:
//
//   - 1 ("HXRAG01"): puts are recPutV1 records, whose chunks have no title field.
//     The pipelines that wrote them kept the document's title in the chunk's
//     metadata ("title"); replaying such a record takes the chunk's Title from
//     there, so a store written before titles were indexed is scored like one
//     written after (no re-ingest needed: the documents' hashes are unchanged).
//   - 2 ("HXRAG02"): puts are recPut records, each chunk with its title after its
//     text. A version 1 log is read as it is, and its header becomes version 2
//     just before the first version 2 record is appended to it (so that the
//     previous version, which knows only "HXRAG01", refuses the file rather than
//     mistaking the new records for corruption and truncating them). Replay
//     accepts both kinds of put under either header.
const (
	logMagicV1     = "HXRAG01\n"
	logMagic       = "HXRAG02\n"
	logHeaderSize  = int64(len(logMagic))
	frameHeader    = 8
	maxRecordBytes = 1 << 30

	recPutV1  byte = 1 // format version 1: chunks without a title
	recDelete byte = 2
	recPut    byte = 3 // format version 2: chunks with a title
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

type logFile struct {
	f    *os.File
	path string
	size int64
	// v1 is set while the header still says format version 1.
	v1 bool
}

// openLog opens (or creates) dir's log and replays its records through apply.
// A record that is cut short, fails its checksum or does not decode ends the
// replay: what precedes it is kept and the file truncated there.
func openLog(dir string, logger *slog.Logger, apply func(r *record, size int64) error) (*logFile, error) {
	path := logPath(dir)
	// A compaction that crashed before its rename leaves a temporary file: the
	// log itself is intact.
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
	if n < len(logMagic) {
		// Empty, or a creation torn before its header was complete.
		if string(head[:n]) != logMagic[:n] && string(head[:n]) != logMagicV1[:n] {
			return fail(fmt.Errorf("%s is not a Helix RAG store log (unknown header); move it away or use another data directory", path))
		}
		if err := f.Truncate(0); err != nil {
			return fail(err)
		}
		if _, err := f.WriteAt([]byte(logMagic), 0); err != nil {
			return fail(err)
		}
		if err := f.Sync(); err != nil {
			return fail(err)
		}
		if err := syncDir(dir); err != nil {
			return fail(err)
		}
		lf.size = logHeaderSize
		if _, err := f.Seek(lf.size, io.SeekStart); err != nil {
			return fail(err)
		}
		return lf, nil
	}
	switch string(head) {
	case logMagic:
	case logMagicV1:
		lf.v1 = true
	default:
		if strings.HasPrefix(string(head), "HXRAG") {
			return fail(fmt.Errorf("%s is a Helix RAG store log of a format this version does not know (header %q; this version reads %q and %q): open it with the Helix that wrote it, or re-ingest into another data directory",
				path, strings.TrimSpace(string(head)), strings.TrimSpace(logMagicV1), strings.TrimSpace(logMagic)))
		}
		return fail(fmt.Errorf("%s is not a Helix RAG store log (unknown header); move it away or use another data directory", path))
	}

	br := bufio.NewReaderSize(f, 1<<20)
	offset := logHeaderSize
	var frame [frameHeader]byte
	var payload []byte
	var bad error
	for {
		if _, err := io.ReadFull(br, frame[:]); err != nil {
			if errors.Is(err, io.EOF) {
				break // a clean end
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				bad = errors.New("the record's header is cut short (a write torn by a crash)")
			} else {
				return fail(err)
			}
			break
		}
		length := int64(binary.LittleEndian.Uint32(frame[:4]))
		sum := binary.LittleEndian.Uint32(frame[4:])
		if length > maxRecordBytes || offset+frameHeader+length > st.Size() {
			if length > maxRecordBytes {
				bad = fmt.Errorf("the record claims %d bytes, more than any record holds", length)
			} else {
				bad = fmt.Errorf("the record claims %d bytes but the file ends first (a write torn by a crash)", length)
			}
			break
		}
		if int64(cap(payload)) < length {
			payload = make([]byte, length)
		}
		payload = payload[:length]
		if _, err := io.ReadFull(br, payload); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				bad = errors.New("the record is cut short (a write torn by a crash)")
				break
			}
			return fail(err)
		}
		if crc32.Checksum(payload, crcTable) != sum {
			bad = errors.New("checksum mismatch")
			break
		}
		r, err := decodeRecord(payload)
		if err != nil {
			bad = err
			break
		}
		size := frameHeader + length
		if err := apply(r, size); err != nil {
			bad = err
			break
		}
		offset += size
	}
	if bad != nil {
		logger.Error(fmt.Sprintf("store %s: corrupt record at offset %d: %v; the valid prefix was kept", dir, offset, bad),
			"dir", dir, "offset", offset, "dropped_bytes", st.Size()-offset)
		if err := f.Truncate(offset); err != nil {
			return fail(err)
		}
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	lf.size = offset
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fail(err)
	}
	return lf, nil
}

// append writes r at the end of the log (and syncs it if asked), returning the
// bytes it took. On failure the log is cut back to where it was, so a later
// append does not follow a partial record.
func (l *logFile) append(r *record, sync bool) (int64, error) {
	buf := encodeFrame(nil, r)
	if int64(len(buf))-frameHeader > maxRecordBytes {
		return 0, fmt.Errorf("the document is too large for one log record (%d bytes, at most %d)", len(buf)-frameHeader, maxRecordBytes)
	}
	if l.v1 {
		// A version 2 record follows: say so in the header first (and make it
		// durable before the record), so the previous version refuses the file
		// instead of truncating what it cannot read. Both headers are 8 bytes:
		// the write replaces one in place.
		if _, err := l.f.WriteAt([]byte(logMagic), 0); err != nil {
			return 0, fmt.Errorf("upgrade the header of %s: %w", l.path, err)
		}
		if err := l.f.Sync(); err != nil {
			return 0, fmt.Errorf("upgrade the header of %s: %w", l.path, err)
		}
		l.v1 = false
	}
	if _, err := l.f.Write(buf); err != nil {
		l.rollback()
		return 0, fmt.Errorf("append to %s: %w", l.path, err)
	}
	if sync {
		if err := l.f.Sync(); err != nil {
			l.rollback()
			return 0, fmt.Errorf("sync %s: %w", l.path, err)
		}
	}
	l.size += int64(len(buf))
	return int64(len(buf)), nil
}

func (l *logFile) rollback() {
	if l.f.Truncate(l.size) == nil {
		l.f.Seek(l.size, io.SeekStart)
	}
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
	lf := &logFile{f: f, path: old.path, size: size}
	if sync {
		if err := syncDir(dir); err != nil {
			// The rename happened, so the new log is the one to append to; only
			// the rename's durability is in doubt.
			return lf, sizes, fmt.Errorf("sync directory %s after replacing the log: %w", dir, err)
		}
	}
	return lf, sizes, nil
}

// encodeFrame appends r's framed encoding to buf.
func encodeFrame(buf []byte, r *record) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeader)...)
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
	payload := buf[start+frameHeader:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, crcTable))
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
	s := string(d.b[:n])
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
