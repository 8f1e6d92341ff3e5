package embedded

import (
	"fmt"
	"slices"

	"github.com/arvenza/helix/internal/rag"
)

// index is the in-memory state: chunks by ordinal, their vectors in one slab,
// the inverted index and the documents. Removed chunks stay as tombstones
// (skipped by searches) until the log is compacted and the index rebuilt, so a
// delete costs only the document's own chunks.
type index struct {
	chunks []chunkEntry
	// vecs holds dim float32s per chunk ordinal once the first vectors were put
	// (zeros for chunks without vectors).
	vecs []float32
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
}

type chunkEntry struct {
	chunk  rag.Chunk
	terms  []termFreq // of the text, for df upkeep on removal and for rebuilds
	length uint32     // terms in the text (BM25's document length)
	tterms []termFreq // of the title; nil without one
	tlen   uint32     // terms in the title
	dead   bool
	hasVec bool
}

type termFreq struct {
	term uint32
	tf   uint32
}

type posting struct {
	ord uint32
	tf  uint32
}

type docEntry struct {
	hash     string
	ords     []uint32
	recBytes int64
	// seq orders documents by their latest put, so a rewritten log keeps the
	// order of the original.
	seq uint64
}

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

func newIndex() *index {
	return &index{termIDs: map[string]uint32{}, docs: map[string]*docEntry{}}
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

// put replaces r's document with r's chunks; size is the record's log size.
func (x *index) put(r *record, size int64, analyzed []analyzedChunk) {
	if x.docs[r.docID] != nil {
		x.remove(r.docID)
	}
	x.seq++
	seq := x.seq
	if r.dim > 0 && x.dim == 0 {
		x.dim = r.dim
		x.vecs = make([]float32, len(x.chunks)*r.dim, (len(x.chunks)+len(r.chunks))*r.dim)
	}
	d := &docEntry{hash: r.hash, recBytes: size, seq: seq, ords: make([]uint32, len(r.chunks))}
	for i := range r.chunks {
		ord := uint32(len(x.chunks))
		d.ords[i] = ord
		a := analyzed[i]
		// The entry goes in first: sealing a block reads its chunks' lengths.
		x.chunks = append(x.chunks, chunkEntry{chunk: r.chunks[i], length: a.text.length, hasVec: r.dim > 0, terms: make([]termFreq, len(a.text.terms))})
		e := &x.chunks[ord]
		for j, t := range a.text.terms {
			id := x.termID(t)
			x.postings[id].add(ord, a.text.tfs[j], x.textLen)
			x.df[id]++
			e.terms[j] = termFreq{term: id, tf: a.text.tfs[j]}
		}
		if len(a.title.terms) > 0 {
			e.tlen = a.title.length
			e.tterms = make([]termFreq, len(a.title.terms))
			for j, t := range a.title.terms {
				id := x.termID(t)
				x.tpostings[id].add(ord, a.title.tfs[j], x.titleLen)
				x.tdf[id]++
				e.tterms[j] = termFreq{term: id, tf: a.title.tfs[j]}
			}
			x.liveTitled++
			x.liveTitleLength += int64(e.tlen)
		}
		if x.dim > 0 {
			if r.dim > 0 {
				x.vecs = append(x.vecs, r.vectors[i*r.dim:(i+1)*r.dim]...)
			} else {
				x.vecs = append(x.vecs, make([]float32, x.dim)...)
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

// remove tombstones the document's chunks.
func (x *index) remove(docID string) {
	d := x.docs[docID]
	if d == nil {
		return
	}
	for _, ord := range d.ords {
		e := &x.chunks[ord]
		for _, tf := range e.terms {
			x.df[tf.term]--
		}
		x.liveLength -= int64(e.length)
		if len(e.tterms) > 0 {
			for _, tf := range e.tterms {
				x.tdf[tf.term]--
			}
			x.liveTitled--
			x.liveTitleLength -= int64(e.tlen)
		}
		// A rebuild skips tombstones without reading them: their text and
		// terms can go now.
		*e = chunkEntry{dead: true}
	}
	x.liveChunks -= len(d.ords)
	x.liveBytes -= d.recBytes
	delete(x.docs, docID)
}

// docRecords returns a put record per live document, in the order they were
// put, for rewriting the log.
func (x *index) docRecords() []*record {
	ids := make([]string, 0, len(x.docs))
	for id := range x.docs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		sa, sb := x.docs[a].seq, x.docs[b].seq
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	out := make([]*record, len(ids))
	for i, id := range ids {
		d := x.docs[id]
		r := &record{kind: recPut, docID: id, hash: d.hash, chunks: make([]rag.Chunk, len(d.ords))}
		withVecs := len(d.ords) > 0 && x.chunks[d.ords[0]].hasVec
		if withVecs {
			r.dim = x.dim
			r.vectors = make([]float32, 0, len(d.ords)*x.dim)
		}
		for j, ord := range d.ords {
			r.chunks[j] = x.chunks[ord].chunk
			if withVecs {
				r.vectors = append(r.vectors, x.vecs[int(ord)*x.dim:(int(ord)+1)*x.dim]...)
			}
		}
		out[i] = r
	}
	return out
}

// rebuilt returns a copy of x without tombstones, documents in the order of
// docRecords, each with its new log record size.
func (x *index) rebuilt(recs []*record, sizes []int64) *index {
	y := newIndex()
	y.dim, y.seq = x.dim, x.seq
	if x.dim > 0 {
		y.vecs = make([]float32, 0, x.liveChunks*x.dim)
	}
	y.chunks = make([]chunkEntry, 0, x.liveChunks)
	termMap := make(map[uint32]uint32)
	for i, r := range recs {
		old := x.docs[r.docID]
		d := &docEntry{hash: old.hash, recBytes: sizes[i], seq: old.seq, ords: make([]uint32, len(old.ords))}
		for j, oldOrd := range old.ords {
			ord := uint32(len(y.chunks))
			d.ords[j] = ord
			e := x.chunks[oldOrd]
			newID := func(old uint32) uint32 {
				id, ok := termMap[old]
				if !ok {
					id = y.termID(x.terms[old])
					termMap[old] = id
				}
				return id
			}
			y.chunks = append(y.chunks, e)
			ne := &y.chunks[ord]
			terms := make([]termFreq, len(e.terms))
			for k, tf := range e.terms {
				id := newID(tf.term)
				y.postings[id].add(ord, tf.tf, y.textLen)
				y.df[id]++
				terms[k] = termFreq{term: id, tf: tf.tf}
			}
			ne.terms = terms
			if len(e.tterms) > 0 {
				tterms := make([]termFreq, len(e.tterms))
				for k, tf := range e.tterms {
					id := newID(tf.term)
					y.tpostings[id].add(ord, tf.tf, y.titleLen)
					y.tdf[id]++
					tterms[k] = termFreq{term: id, tf: tf.tf}
				}
				ne.tterms = tterms
				y.liveTitled++
				y.liveTitleLength += int64(e.tlen)
			}
			if x.dim > 0 {
				y.vecs = append(y.vecs, x.vecs[int(oldOrd)*x.dim:(int(oldOrd)+1)*x.dim]...)
			}
			y.liveLength += int64(e.length)
		}
		y.liveChunks += len(old.ords)
		y.liveBytes += sizes[i]
		y.docs[r.docID] = d
	}
	for i := range y.postings {
		y.postings[i].compact()
		y.tpostings[i].compact()
	}
	return y
}

// textLen and titleLen are a chunk's field lengths by ordinal.
func (x *index) textLen(ord uint32) uint32  { return x.chunks[ord].length }
func (x *index) titleLen(ord uint32) uint32 { return x.chunks[ord].tlen }
