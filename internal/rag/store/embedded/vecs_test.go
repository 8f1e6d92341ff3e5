package embedded

import (
	"fmt"
	"os"
	"testing"
	"unsafe"
)

// TestPutAfterOpenLeavesTheMappedVectors: the vectors a store opened with in
// its saved index stay where they are mapped; a put adds its vectors on
// pages of their own instead of copying them all to the heap. Across pages
// and the mapping, searches answer exactly as after a full replay.
func TestPutAfterOpenLeavesTheMappedVectors(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true, VectorIndexThreshold: -1})
	c := newCorpus(12, 8)
	for i := range 300 {
		id := fmt.Sprint("doc", i)
		hash, cs, vecs := c.doc(id, 1+i%3)
		mustPut(t, s, id, hash, cs, vecs)
	}
	s.Close()
	s, _ = open(t, dir, Options{NoSync: true, VectorIndexThreshold: -1})
	if s.seg == nil || s.seg.mapping == nil {
		t.Fatal("the store did not open with its saved index")
	}
	mapped := func() bool {
		b := s.idx.vecs.base
		if len(b) == 0 {
			return false
		}
		m := s.seg.mapping
		p := uintptr(unsafe.Pointer(&b[0]))
		lo := uintptr(unsafe.Pointer(&m[0]))
		return p >= lo && p+uintptr(len(b)*4) <= lo+uintptr(len(m))
	}
	if !mapped() {
		t.Fatal("the opened store's vectors are not those of the mapping")
	}
	n := s.idx.vecs.len()
	// Enough puts to fill more than a page.
	for i := 300; i < 300+vecPage/2+10; i++ {
		id := fmt.Sprint("doc", i)
		hash, cs, vecs := c.doc(id, 3)
		mustPut(t, s, id, hash, cs, vecs)
	}
	if !mapped() || s.idx.vecs.len() <= n+vecPage {
		t.Fatalf("after puts: mapped %v, %d vectors (had %d)", mapped(), s.idx.vecs.len(), n)
	}
	if held := len(s.idx.vecs.base) / s.idx.dim; held != n {
		t.Fatalf("the mapped vectors changed from %d to %d", n, held)
	}
	crashed := t.TempDir()
	copyStore(t, dir, crashed)
	want := results(t, s)
	s.Close()
	s2, _ := open(t, dir, Options{NoSync: true, VectorIndexThreshold: -1})
	if got := results(t, s2); got != want {
		t.Fatalf("reopened:\n%s\nwant\n%s", got, want)
	}
	s2.Close()
	s3, _ := open(t, crashed, Options{NoSync: true, VectorIndexThreshold: -1})
	if got := results(t, s3); got != want {
		t.Fatalf("from the older saved index and the log:\n%s\nwant\n%s", got, want)
	}
}

// TestOpenTailsAreMapped: the posting lists' open tails are used where they
// lie in the saved index's mapping, not decoded to the heap; appending to
// one (and sealing it) after the open leaves the mapping as it is.
func TestOpenTailsAreMapped(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true})
	c := newCorpus(13, 8)
	fillSegmentStore(t, s, c, 0, 200)
	s.Close()
	s, _ = open(t, dir, Options{NoSync: true})
	m := s.seg.mapping
	lo, hi := uintptr(unsafe.Pointer(&m[0])), uintptr(unsafe.Pointer(&m[0]))+uintptr(len(m))
	tails, inMap := 0, 0
	for i := range s.idx.postings {
		for _, p := range []*postingList{&s.idx.postings[i], &s.idx.tpostings[i]} {
			if len(p.tail) == 0 {
				continue
			}
			tails++
			if a := uintptr(unsafe.Pointer(&p.tail[0])); a >= lo && a < hi && a%4 == 0 {
				inMap++
			}
		}
	}
	if tails == 0 || inMap != tails {
		t.Fatalf("%d of %d tails in the mapping", inMap, tails)
	}
	fillSegmentStore(t, s, c, 200, 300)
	crashed := t.TempDir()
	copyStore(t, dir, crashed)
	want := results(t, s)
	os.Remove(segmentPath(crashed))
	r, _ := open(t, crashed, Options{NoSync: true})
	if got := results(t, r); got != want {
		t.Fatalf("appended to mapped tails:\n%s\nwant\n%s", got, want)
	}
}
