package embedded

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"unsafe"
)

// The persisted index. Replaying the log re-analyses every chunk, the costly
// part of indexing, which grows with the store; so the index is also saved
// beside the log (at Close, and in the background: bgsave.go), in
// keyword.idx, with the stretch of the log it covers (its first covered bytes,
// and their CRC32-C). Open maps the file, checks it, takes the index from it
// and replays only the log after the covered stretch. The file is never
// trusted blindly: its own checksum, the log's covered bytes' checksum and the
// format are checked, and a file that fails any of them is ignored (and
// reported) — the index is rebuilt from the log as if there were none.
//
// The posting lists' blocks and open tails and the vectors are used where
// they lie in the mapping, outside the Go heap; what a write adds goes to the
// heap (a list's bytes and tail are copied on their first append, new vectors
// go on pages of their own: see vectorSlab).
//
//	"HXKIDX1\n" | covered (uint64) | CRC32-C of the log's covered bytes (uint32) |
//	body (uvarints, strings, the vectors' float32s) | CRC32-C of all before (uint32)

const (
	segmentMagic = "HXKIDX3\n"
	segmentName  = "keyword.idx"
)

func segmentPath(dir string) string { return filepath.Join(dir, segmentName) }

// logChecksum is the CRC32-C of the first n bytes of the log read through f
// (an error when it is shorter), continuing from the checksum sum of its
// first from bytes (0 and 0 to start from the beginning).
func logChecksum(f io.ReaderAt, from int64, sum uint32, n int64) (uint32, error) {
	buf := make([]byte, 1<<20)
	for off := from; off < n; {
		k := min(int64(len(buf)), n-off)
		if m, err := f.ReadAt(buf[:k], off); int64(m) < k {
			return 0, fmt.Errorf("the log is shorter than the index covers: %v", err)
		}
		sum = crc32.Update(sum, crcTable, buf[:k])
		off += k
	}
	return sum, nil
}

// checksummed is a stretch of the log from its start whose checksum is known.
type checksummed struct {
	n   int64
	sum uint32
}

// saveSegment writes x (which covers the log up to covered, with damage the
// damaged stretches before it) to the segment file: a temporary file, fsynced,
// renamed over the old one. prev is a known checksum of the log's start, to
// continue from (the zero value for none). It returns the covered bytes'
// checksum.
func saveSegment(dir string, x *index, covered int64, damage []Damage, logf io.ReaderAt, prev checksummed) (uint32, error) {
	sum, err := writeSegmentTemp(nil, dir, x, covered, damage, logf, prev)
	if err != nil {
		return 0, err
	}
	if err := os.Rename(segmentPath(dir)+".tmp", segmentPath(dir)); err != nil {
		os.Remove(segmentPath(dir) + ".tmp")
		return 0, err
	}
	return sum, syncDir(dir)
}

// writeSegmentTemp writes x to the segment's temporary file and fsyncs it
// (removing it on failure); the caller renames it. s, when not nil, is the
// store whose save it is, for tests' hooks.
func writeSegmentTemp(s *Store, dir string, x *index, covered int64, damage []Damage, logf io.ReaderAt, prev checksummed) (uint32, error) {
	if prev.n < logHeaderSize || prev.n > covered {
		prev = checksummed{}
	}
	sum, err := logChecksum(logf, prev.n, prev.sum, covered)
	if err != nil {
		return 0, err
	}
	tmp := segmentPath(dir) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := encodeSegment(f, x, covered, sum, damage); err != nil {
		return 0, err
	}
	s.saveHook(saveWritten)
	if err := f.Sync(); err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	ok = true
	s.saveHook(saveSynced)
	return sum, nil
}

// encodeSegment writes x's segment (see the format above) to f.
func encodeSegment(f *os.File, x *index, covered int64, sum uint32, damage []Damage) error {
	crc := crc32.New(crcTable)
	w := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<20)
	var b []byte
	var written int64 // the file's size so far
	flush := func() error {
		n, err := w.Write(b)
		written += int64(n)
		b = b[:0]
		return err
	}
	raw := func(p []byte) error {
		n, err := w.Write(p)
		written += int64(n)
		return err
	}
	uv := func(v uint64) { b = binary.AppendUvarint(b, v) }
	b = append(b, segmentMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(covered))
	b = binary.LittleEndian.AppendUint32(b, sum)
	uv(uint64(len(damage)))
	for _, d := range damage {
		uv(uint64(d.Offset))
		uv(uint64(d.Length))
		b = appendString(b, d.Reason)
	}
	for _, v := range []int64{int64(x.dim), int64(x.liveChunks), x.liveLength, int64(x.liveTitled), x.liveTitleLength, x.liveBytes, int64(x.seq)} {
		uv(uint64(v))
	}
	// Documents, numbered in the order written: chunks name theirs by number.
	docNum := make(map[*docEntry]uint64, len(x.docs))
	uv(uint64(len(x.docs)))
	for _, d := range x.docs {
		docNum[d] = uint64(len(docNum)) + 1
		b = appendString(b, d.id)
		b = appendString(b, d.hash.String())
		uv(uint64(d.off))
		uv(uint64(d.recBytes))
		uv(d.seq)
		b = appendString(b, d.meta)
		if len(b) > 1<<20 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	uv(uint64(len(x.chunks)))
	for i := range x.chunks {
		e := &x.chunks[i]
		flags := uint64(0)
		if e.dead {
			flags |= 1
		}
		if e.hasVec {
			flags |= 2
		}
		uv(flags)
		if !e.dead {
			uv(docNum[e.doc])
			uv(uint64(e.sub))
			uv(uint64(e.length))
			uv(uint64(e.tlen))
		}
		if len(b) > 1<<20 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	uv(uint64(len(x.terms)))
	for id, t := range x.terms {
		b = appendString(b, t)
		uv(uint64(x.df[id]))
		uv(uint64(x.tdf[id]))
		for _, p := range []*postingList{&x.postings[id], &x.tpostings[id]} {
			uv(uint64(len(p.blocks)))
			for _, m := range p.blocks {
				uv(uint64(m.off))
				uv(uint64(m.last))
				uv(uint64(m.maxTF))
				uv(uint64(m.minLen))
			}
			uv(uint64(len(p.tail)))
			uv(uint64(len(p.data)))
			if err := flush(); err != nil {
				return err
			}
			if err := raw(p.data); err != nil {
				return err
			}
			// The open tail as it is in memory, 4-byte aligned in the file, so
			// that it is used in place.
			if len(p.tail) > 0 {
				b = append(b, make([]byte, (4-written%4)%4)...)
				b = append(b, unsafe.Slice((*byte)(unsafe.Pointer(&p.tail[0])), len(p.tail)*int(unsafe.Sizeof(posting{})))...)
			}
		}
	}
	// The vectors last, 4-byte aligned in the file so they can be used in
	// place: padding up to the next multiple of 4 after their count.
	uv(uint64(x.vecs.len() * x.dim))
	if err := flush(); err != nil {
		return err
	}
	b = append(b, make([]byte, (4-written%4)%4)...)
	if err := flush(); err != nil {
		return err
	}
	if err := x.vecs.writeTo(w, x.vecs.len()); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := f.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// segment is a loaded segment: the index, what it covers, and the mapping
// its postings and vectors live in (unmapped when the store closes).
type segment struct {
	idx     *index
	covered int64
	sum     uint32 // the CRC32-C of the log's covered bytes
	damage  []Damage
	mapping []byte
}

// loadSegment maps and checks dir's segment for the log read through logf
// (of logSize bytes); nil and no error when there is none. An error says why
// the segment cannot be used: the caller replays the whole log instead.
func loadSegment(dir string, logf io.ReaderAt, logSize int64, src io.ReaderAt) (*segment, error) {
	f, err := os.Open(segmentPath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < int64(len(segmentMagic))+16 || size > math.MaxInt {
		return nil, errors.New("the index file is cut short")
	}
	m, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("map the index file: %w", err)
	}
	seg, err := decodeSegment(m, logf, logSize, src)
	if err != nil {
		unmapFile(m)
		return nil, err
	}
	seg.mapping = m
	return seg, nil
}

func decodeSegment(m []byte, logf io.ReaderAt, logSize int64, src io.ReaderAt) (*segment, error) {
	body := m[:len(m)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(m[len(m)-4:]) {
		return nil, errors.New("the index file fails its checksum")
	}
	if string(body[:len(segmentMagic)]) != segmentMagic {
		return nil, errors.New("the index file is of an unknown format")
	}
	covered := int64(binary.LittleEndian.Uint64(body[len(segmentMagic):]))
	sum := binary.LittleEndian.Uint32(body[len(segmentMagic)+8:])
	if covered < logHeaderSize || covered > logSize {
		return nil, fmt.Errorf("the index covers %d bytes of a log of %d (the log was replaced or cut)", covered, logSize)
	}
	if got, err := logChecksum(logf, 0, 0, covered); err != nil || got != sum {
		return nil, errors.New("the log's bytes the index covers changed since it was saved (a compaction, a repair, or damage)")
	}
	d := &decoder{b: body[len(segmentMagic)+12:]}
	seg := &segment{covered: covered, sum: sum}
	for range d.count(3) {
		off, length := int64(d.uvarint()), int64(d.uvarint())
		seg.damage = append(seg.damage, Damage{Offset: off, Length: length, Reason: d.string()})
	}
	x := newIndex(src, true)
	x.dim = int(d.uvarint())
	x.liveChunks = int(d.uvarint())
	x.liveLength = int64(d.uvarint())
	x.liveTitled = int(d.uvarint())
	x.liveTitleLength = int64(d.uvarint())
	x.liveBytes = int64(d.uvarint())
	x.seq = d.uvarint()
	ndocs := d.count(6)
	docs := make([]*docEntry, ndocs)
	for i := range docs {
		e := &docEntry{id: d.string(), hash: makeDocHash(d.string()), off: int64(d.uvarint()), recBytes: int64(d.uvarint()), seq: d.uvarint(), meta: d.string()}
		docs[i] = e
		x.docs[e.id] = e
	}
	nchunks := d.count(1)
	x.chunks = make([]chunkEntry, nchunks)
	for i := range x.chunks {
		flags := d.uvarint()
		e := &x.chunks[i]
		e.dead, e.hasVec = flags&1 != 0, flags&2 != 0
		if e.dead {
			continue
		}
		n := d.uvarint()
		if d.err == nil && (n == 0 || n > uint64(len(docs))) {
			d.fail("chunk %d names document %d of %d", i, n, len(docs))
		}
		if d.err != nil {
			return nil, d.err
		}
		e.doc = docs[n-1]
		e.sub, e.length, e.tlen = uint32(d.uvarint()), uint32(d.uvarint()), uint32(d.uvarint())
		e.doc.ords = append(e.doc.ords, uint32(i))
	}
	nterms := d.count(3)
	for range nterms {
		id := x.termID(d.string())
		x.df[id], x.tdf[id] = int32(d.uvarint()), int32(d.uvarint())
		for _, p := range []*postingList{&x.postings[id], &x.tpostings[id]} {
			if nb := d.count(4); nb > 0 {
				p.blocks = make([]blockMeta, nb)
				for j := range p.blocks {
					p.blocks[j] = blockMeta{off: uint32(d.uvarint()), last: uint32(d.uvarint()), maxTF: uint32(d.uvarint()), minLen: uint32(d.uvarint())}
				}
			}
			nt := d.count(8)
			n := d.count(1)
			if d.err != nil {
				return nil, d.err
			}
			// In place, capacities capped: an append copies to the heap.
			p.data = d.b[:n:n]
			d.b = d.b[n:]
			if nt > 0 {
				pad := (4 - int(uintptr(unsafe.Pointer(unsafe.SliceData(d.b)))%4)) % 4
				size := nt * int(unsafe.Sizeof(posting{}))
				if len(d.b) < pad+size {
					return nil, errors.New("the index file's postings are cut short")
				}
				p.tail = unsafe.Slice((*posting)(unsafe.Pointer(&d.b[pad])), nt)[:nt:nt]
				d.b = d.b[pad+size:]
			}
		}
	}
	nvecs := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	pos := len(body) - len(d.b)
	pad := (4 - pos%4) % 4
	if uint64(len(d.b)) != uint64(pad)+nvecs*4 || (x.dim > 0 && nvecs != uint64(x.dim)*uint64(nchunks)) || (x.dim == 0 && nvecs != 0) {
		return nil, errors.New("the index file's vectors do not match its chunks")
	}
	if nvecs > 0 {
		v := d.b[pad:]
		x.vecs = vectorSlab{dim: x.dim, base: unsafe.Slice((*float32)(unsafe.Pointer(&v[0])), nvecs)[:nvecs:nvecs], n: int(nvecs) / x.dim}
	}
	return seg, validateSegment(x, seg)
}

// validateSegment checks what decoding alone does not: every ordinal and
// offset within bounds, so that a segment that passed its checksum but was
// written wrong cannot send a query out of range.
func validateSegment(x *index, seg *segment) error {
	seg.idx = x
	n := uint32(len(x.chunks))
	for _, d := range x.docs {
		nm := d.metaMaps()
		if d.off < logHeaderSize || d.off+d.recBytes > seg.covered || (nm > 1 && nm != len(d.ords)) {
			return fmt.Errorf("the index file's document %q is out of bounds", d.id)
		}
		for _, ord := range d.ords {
			if e := &x.chunks[ord]; int(e.sub) >= len(d.ords) {
				return fmt.Errorf("the index file's document %q is out of bounds", d.id)
			}
		}
	}
	for id := range x.terms {
		for _, p := range []*postingList{&x.postings[id], &x.tpostings[id]} {
			for j, m := range p.blocks {
				if m.last >= n || int(m.off) > len(p.data) || (j > 0 && m.last <= p.blocks[j-1].last) {
					return fmt.Errorf("the index file's postings of %q are out of bounds", x.terms[id])
				}
			}
			for _, q := range p.tail {
				if q.ord >= n {
					return fmt.Errorf("the index file's postings of %q are out of bounds", x.terms[id])
				}
			}
		}
	}
	return nil
}
