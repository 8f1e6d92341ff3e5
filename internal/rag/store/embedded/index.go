package embedded

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/arvenza/helix/internal/rag"
)

// index is what a store keeps in memory: per chunk only what ranking and
// filtering need (its field lengths, its document, a dead bit), the inverted
// index, the vectors and the documents with their metadata (interned: once per
// document when its chunks share it, as a pipeline's do). A chunk's text,
// headings and offsets stay in the log and are read from there for the hits a
// query returns. Removed chunks stay as tombstones (skipped by searches) until
// the log is compacted and the index rebuilt, so a delete costs only the
// document's own chunks.
type index struct {
	chunks []chunkEntry
	// vecs holds dim float32s per chunk ordinal once the first vectors were put
	// (zeros for chunks without vectors).
	vecs vectorSlab
	dim  int

	// The keyword index has two fields, a chunk's text and its title, with one
	// term dictionary and each field's own postings and statistics (see
	// SearchKeyword).
	termIDs   map[string]uint32
	terms     []string      // term id -> term
	postings  []postingList // term id -> chunks whose text holds it, by ordinal
	df        []int32       // term id -> live chunks whose text holds it
	tpostings []postingList // term id -> chunks whose title holds it, by ordinal
	tdf       []int32       // term id -> live chunks whose title holds it

	docs       map[string]*docEntry
	liveChunks int
	liveLength int64 // total text terms of live chunks, for the average length
	// liveTitled counts the live chunks with at least one title term, and
	// liveTitleLength their title terms: the title field's N and average length.
	liveTitled      int
	liveTitleLength int64
	liveBytes       int64  // log bytes of the live documents' records
	seq             uint64 // of the latest put

	// src reads the log the documents' offsets point into (the index's own
	// read-only descriptor, so a compaction's new log does not pull the file
	// from under a query still reading the old one); framed is false while
	// that log is of format version 1 or 2.
	src    io.ReaderAt
	framed bool
}

type chunkEntry struct {
	doc    *docEntry
	sub    uint32 // the chunk's position in its document's record
	length uint32 // terms in the text (BM25's document length)
	tlen   uint32 // terms in the title; 0 without one
	dead   bool
	hasVec bool
}

type posting struct {
	ord uint32
	tf  uint32
}

type docEntry struct {
	id       string
	hash     docHash
	ords     []uint32
	off      int64 // of its put record in the log
	recBytes int64
	// seq orders documents by their latest put, so a rewritten log keeps the
	// order of the original.
	seq uint64
	// meta is the chunks' metadata, encoded (see encodeMetadata): one map
	// when they all share it, else one per chunk. Decoded for filters
	// (metaCache); hits get their own copy from the log.
	meta string
}

// metaCache is a query's decoded metadata of the document it looked at last:
// a document's chunks are consecutive, so each is decoded about once.
type metaCache struct {
	doc  *docEntry
	maps []map[string]any
	// vals are the values decoded so far, by their encoding: documents that
	// share a value (a tenant, a year) share its decoding.
	vals map[string]any
}

// maxCachedValues bounds a query's metaCache.vals.
const maxCachedValues = 4096

// analyzedChunk is a chunk's keyword terms, computed before taking any lock.
type analyzedChunk struct {
	text, title analyzedField
}

// analyzedField is one field's distinct terms, their counts and its length.
type analyzedField struct {
	terms  []string
	tfs    []uint32
	length uint32
}

func newIndex(src io.ReaderAt, framed bool) *index {
	return &index{termIDs: map[string]uint32{}, docs: map[string]*docEntry{}, src: src, framed: framed}
}

// analyze makes the keyword terms of a put record's chunks.
func (s *Store) analyze(r *record) []analyzedChunk {
	if r.kind != recPut {
		return nil
	}
	out := make([]analyzedChunk, len(r.chunks))
	counts := map[string]uint32{}
	for i := range r.chunks {
		out[i].text = s.analyzeField(r.chunks[i].Text, counts)
		switch title := r.chunks[i].Title; {
		case title == "":
		case i > 0 && title == r.chunks[i-1].Title:
			// A document's chunks share its title: analysed once (the
			// slices are only read).
			out[i].title = out[i-1].title
		default:
			out[i].title = s.analyzeField(title, counts)
		}
	}
	return out
}

func (s *Store) analyzeField(text string, counts map[string]uint32) analyzedField {
	toks := s.analyzer.Tokens(text)
	clear(counts)
	for _, t := range toks {
		counts[t]++
	}
	a := analyzedField{terms: make([]string, 0, len(counts)), tfs: make([]uint32, 0, len(counts)), length: uint32(min(len(toks), 1<<31))}
	for t, n := range counts {
		a.terms = append(a.terms, t)
		a.tfs = append(a.tfs, n)
	}
	return a
}

// termID returns t's id, adding it to the dictionary when new.
func (x *index) termID(t string) uint32 {
	id, ok := x.termIDs[t]
	if !ok {
		id = uint32(len(x.terms))
		x.termIDs[t] = id
		x.terms = append(x.terms, t)
		x.postings = append(x.postings, postingList{})
		x.df = append(x.df, 0)
		x.tpostings = append(x.tpostings, postingList{})
		x.tdf = append(x.tdf, 0)
	}
	return id
}

func (x *index) checkDim(r *record) error {
	if r.dim > 0 && x.dim > 0 && r.dim != x.dim {
		return fmt.Errorf("put %q: vectors have %d dimensions, the store holds %d-dimensional vectors (a store holds one embedding model's vectors; use a new data directory for another model)", r.docID, r.dim, x.dim)
	}
	return nil
}

// put replaces r's document with r's chunks; off and size are the record's
// place in the log, gone the terms of the document it replaces (nil if new).
func (x *index) put(r *record, off, size int64, analyzed, gone []analyzedChunk) {
	if x.docs[r.docID] != nil {
		x.remove(r.docID, gone)
	}
	x.seq++
	if r.dim > 0 && x.dim == 0 {
		x.dim = r.dim
		x.vecs = vectorSlab{dim: r.dim}
		for range x.chunks {
			x.vecs.add(nil)
		}
	}
	d := &docEntry{id: r.docID, hash: makeDocHash(r.hash), off: off, recBytes: size, seq: x.seq, ords: make([]uint32, len(r.chunks)), meta: encodeMetadata(r.chunks)}
	for i := range r.chunks {
		ord := uint32(len(x.chunks))
		d.ords[i] = ord
		a := analyzed[i]
		// The entry goes in first: sealing a block reads its chunks' lengths.
		x.chunks = append(x.chunks, chunkEntry{doc: d, sub: uint32(i), length: a.text.length, tlen: a.title.length, hasVec: r.dim > 0})
		for j, t := range a.text.terms {
			id := x.termID(t)
			x.postings[id].add(ord, a.text.tfs[j], x.textLen)
			x.df[id]++
		}
		if len(a.title.terms) > 0 {
			for j, t := range a.title.terms {
				id := x.termID(t)
				x.tpostings[id].add(ord, a.title.tfs[j], x.titleLen)
				x.tdf[id]++
			}
			x.liveTitled++
			x.liveTitleLength += int64(a.title.length)
		}
		if x.dim > 0 {
			if r.dim > 0 {
				x.vecs.add(r.vectors[i*r.dim : (i+1)*r.dim])
			} else {
				x.vecs.add(nil)
			}
		}
		x.liveLength += int64(a.text.length)
	}
	x.liveChunks += len(r.chunks)
	x.liveBytes += size
	x.docs[r.docID] = d
}

// docOrds returns the ordinals of a document's chunks (nil for none).
func (x *index) docOrds(docID string) []uint32 {
	if d := x.docs[docID]; d != nil {
		return d.ords
	}
	return nil
}

// encodeMetadata encodes the chunks' metadata: the number of maps (1 when
// they are all equal, else one per chunk, 0 when none has any), then each
// map's number of keys and its keys (sorted) and values.
func encodeMetadata(chunks []rag.Chunk) string {
	if len(chunks) == 0 {
		return ""
	}
	one := func(m map[string]any) []byte {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b := binary.AppendUvarint(nil, uint64(len(keys)))
		for _, k := range keys {
			b = appendString(b, k)
			b = appendValue(b, m[k])
		}
		return b
	}
	first := one(chunks[0].Metadata)
	encs := [][]byte{first}
	shared, empty := true, len(chunks[0].Metadata) == 0
	for i := 1; i < len(chunks); i++ {
		e := one(chunks[i].Metadata)
		encs = append(encs, e)
		shared = shared && string(e) == string(first)
		empty = empty && len(chunks[i].Metadata) == 0
	}
	switch {
	case empty:
		return ""
	case shared:
		encs = encs[:1]
	}
	b := binary.AppendUvarint(nil, uint64(len(encs)))
	for _, e := range encs {
		b = append(b, e...)
	}
	return string(b)
}

// metaMaps returns the number of maps d's metadata hold (0, 1, or one per
// chunk).
func (d *docEntry) metaMaps() int {
	n, k := binary.Uvarint([]byte(d.meta))
	if k <= 0 {
		return 0
	}
	return int(min(n, 1<<31))
}

// decodeMetadata decodes encoded metadata (see encodeMetadata) into maps,
// reusing those given (cleared), and the values in vals (by their encoding,
// adding those it decodes while vals holds fewer than maxCachedValues); none
// for none or for bytes that do not decode. The keys and string values share
// meta's bytes.
func decodeMetadata(meta string, maps []map[string]any, vals map[string]any) []map[string]any {
	if meta == "" {
		return maps[:0]
	}
	d := &decoder{b: unsafe.Slice(unsafe.StringData(meta), len(meta)), alias: true}
	n := d.count(1)
	out := maps[:0]
	for i := range n {
		var m map[string]any
		if i < len(maps) {
			m = maps[i]
			clear(m)
		}
		if nk := d.count(2); nk > 0 {
			if m == nil {
				m = make(map[string]any, nk)
			}
			for range nk {
				k := d.string()
				n := valueLen(d.b)
				if n <= 0 {
					d.fail("bad metadata value")
					break
				}
				raw := unsafe.String(unsafe.SliceData(d.b), n)
				if v, ok := vals[raw]; ok {
					m[k] = v
					d.b = d.b[n:]
					continue
				}
				v := d.value()
				if vals != nil && len(vals) < maxCachedValues {
					vals[raw] = v
				}
				m[k] = v
			}
		}
		out = append(out, m)
	}
	if d.err != nil {
		return maps[:0]
	}
	return out
}

// remove tombstones the document's chunks; gone are their terms (the analysis
// of the document's record, see [Store.goneTerms]).
func (x *index) remove(docID string, gone []analyzedChunk) {
	d := x.docs[docID]
	if d == nil {
		return
	}
	for i, ord := range d.ords {
		e := &x.chunks[ord]
		if i < len(gone) {
			for _, t := range gone[i].text.terms {
				x.df[x.termIDs[t]]--
			}
			for _, t := range gone[i].title.terms {
				x.tdf[x.termIDs[t]]--
			}
		}
		x.liveLength -= int64(e.length)
		if e.tlen > 0 {
			x.liveTitled--
			x.liveTitleLength -= int64(e.tlen)
		}
		*e = chunkEntry{dead: true}
	}
	x.liveChunks -= len(d.ords)
	x.liveBytes -= d.recBytes
	delete(x.docs, docID)
}

// closeSource closes the descriptor the index reads the log through.
func (x *index) closeSource() {
	if c, ok := x.src.(io.Closer); ok {
		c.Close()
	}
}

// record reads document d's put record from the log.
func (x *index) record(d *docEntry) (*record, error) {
	lr := &logReader{r: x.src, size: d.off + d.recBytes, framed: x.framed}
	r, _, reason, err := lr.frameAt(d.off)
	if err == nil && reason != nil {
		err = reason
	}
	if err == nil && (r.kind != recPut || r.docID != d.id || len(r.chunks) != len(d.ords)) {
		err = fmt.Errorf("the record there is not the document's")
	}
	if err != nil {
		return nil, fmt.Errorf("read document %q at log offset %d: %w (the log changed under the store, or the disk is failing: `helix rag verify` reports the damage)", d.id, d.off, err)
	}
	return r, nil
}

// metadata returns the live chunk ord's metadata, for filters, decoded
// through c (nil: decoded for this call).
func (x *index) metadataVia(ord uint32, c *metaCache) map[string]any {
	e := &x.chunks[ord]
	if c == nil {
		c = &metaCache{}
	}
	if c.doc != e.doc {
		if c.vals == nil {
			c.vals = map[string]any{}
		}
		c.doc, c.maps = e.doc, decodeMetadata(e.doc.meta, c.maps, c.vals)
	}
	switch {
	case len(c.maps) == 1:
		return c.maps[0]
	case int(e.sub) < len(c.maps):
		return c.maps[e.sub]
	}
	return nil
}

// metadata returns the live chunk ord's metadata.
func (x *index) metadata(ord uint32) map[string]any { return x.metadataVia(ord, nil) }

// docRecords returns a put record per live document, in the order they were
// put, for rewriting the log: read from the log (their chunks are not kept in
// memory), with the vectors of the index.
func (x *index) docRecords() ([]*record, error) {
	docs := make([]*docEntry, 0, len(x.docs))
	for _, d := range x.docs {
		docs = append(docs, d)
	}
	slices.SortFunc(docs, func(a, b *docEntry) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	out := make([]*record, len(docs))
	for i, d := range docs {
		r, err := x.record(d)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// rebuilt returns a copy of x without tombstones for a rewritten log: the
// live documents ids, in the order they were put (x's order), each at offs[i]
// with sizes[i] bytes in the new log (read through src, which the new index
// owns). Postings are carried over, not re-analysed: live chunks keep their
// order, so each list only loses its tombstones and has its ordinals
// renumbered.
func (x *index) rebuilt(ids []string, offs, sizes []int64, src io.ReaderAt) *index {
	y := newIndex(src, true)
	y.dim, y.seq = x.dim, x.seq
	if x.dim > 0 {
		y.vecs = vectorSlab{dim: x.dim}
	}
	y.chunks = make([]chunkEntry, 0, x.liveChunks)
	newOrd := make([]uint32, len(x.chunks))
	for i, id := range ids {
		old := x.docs[id]
		d := &docEntry{id: old.id, hash: old.hash, off: offs[i], recBytes: sizes[i], seq: old.seq, ords: make([]uint32, len(old.ords)), meta: old.meta}
		for j, oldOrd := range old.ords {
			ord := uint32(len(y.chunks))
			d.ords[j] = ord
			newOrd[oldOrd] = ord
			e := x.chunks[oldOrd]
			e.doc = d
			y.chunks = append(y.chunks, e)
			if x.dim > 0 {
				y.vecs.add(x.vecs.at(int(oldOrd)))
			}
			y.liveLength += int64(e.length)
			if e.tlen > 0 {
				y.liveTitled++
				y.liveTitleLength += int64(e.tlen)
			}
		}
		y.liveChunks += len(old.ords)
		y.liveBytes += sizes[i]
		y.docs[id] = d
	}
	for id, term := range x.terms {
		if x.df[id] == 0 && x.tdf[id] == 0 {
			continue // no live chunk holds it any more
		}
		nid := y.termID(term)
		y.df[nid], y.tdf[nid] = x.df[id], x.tdf[id]
		carry(&x.postings[id], &y.postings[nid], x, newOrd, y.textLen)
		carry(&x.tpostings[id], &y.tpostings[nid], x, newOrd, y.titleLen)
	}
	return y
}

// carry copies from's live postings to to, renumbered by newOrd.
func carry(from, to *postingList, x *index, newOrd []uint32, lengths func(uint32) uint32) {
	if from.len() == 0 {
		return
	}
	for c := newCursor(from, nil); !c.done; c.next() {
		if !x.chunks[c.ord].dead {
			to.add(newOrd[c.ord], c.tf(), lengths)
		}
	}
	to.compact()
}

// textLen and titleLen are a chunk's field lengths by ordinal.
func (x *index) textLen(ord uint32) uint32  { return x.chunks[ord].length }
func (x *index) titleLen(ord uint32) uint32 { return x.chunks[ord].tlen }

// docHash is a document's content hash: a SHA-256 in lowercase hex (what the
// pipeline writes) as its 32 bytes, any other string as it is.
type docHash struct {
	sum   [32]byte
	other *string // the hash when it is not 64 lowercase hex digits
}

func makeDocHash(h string) docHash {
	var d docHash
	if len(h) != 64 {
		d.other = &h
		return d
	}
	for i := range 64 {
		c := h[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		default:
			d.other = &h
			return d
		}
		d.sum[i/2] |= v << (4 * (1 - i%2))
	}
	return d
}

// String returns the hash as it was put.
func (d docHash) String() string {
	if d.other != nil {
		return *d.other
	}
	return hex.EncodeToString(d.sum[:])
}

// valueLen returns the length of the encoded metadata value b begins with
// (see appendValue), or 0 when b does not begin with one.
func valueLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	n := 0
	switch b[0] {
	case tagNil:
		n = 1
	case tagString, tagJSON:
		l, k := binary.Uvarint(b[1:])
		if k <= 0 || l > uint64(len(b)) {
			return 0
		}
		n = 1 + k + int(l)
	case tagInt:
		_, k := binary.Varint(b[1:])
		if k <= 0 {
			return 0
		}
		n = 1 + k
	case tagFloat:
		n = 9
	case tagBool:
		n = 2
	default:
		return 0
	}
	if n > len(b) {
		return 0
	}
	return n
}
