package embedded

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// mappingRSS returns the resident kilobytes of the mapping that holds address
// a, from /proc/self/smaps.
func mappingRSS(t *testing.T, a uintptr) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, "-") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = a >= lo && a < hi
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			var kb int
			fmt.Sscanf(strings.TrimPrefix(line, "Rss:"), "%d", &kb)
			return kb
		}
	}
	t.Fatalf("no mapping holds %x", a)
	return 0
}

// TestLoadingTheVectorIndexLeavesVectorsUnresident: loading the saved vector
// index (and building one) reads every vector of the saved index's mapping;
// their pages are then given back, so they do not stay in the process's
// resident memory.
func TestLoadingTheVectorIndexLeavesVectorsUnresident(t *testing.T) {
	dir := t.TempDir()
	const dim = 256
	s, _ := open(t, dir, Options{NoSync: true, VectorIndexThreshold: 500})
	c := newCorpus(14, dim)
	for i := range 1200 {
		id := fmt.Sprint("doc", i)
		hash, cs, vecs := c.doc(id, 2)
		mustPut(t, s, id, hash, cs, vecs)
	}
	s.Close()
	s, logs := open(t, dir, Options{NoSync: true, VectorIndexThreshold: 500})
	s.vi.wg.Wait() // a build the load started (it reads every vector too)
	s.mu.RLock()
	loaded := s.vi.ann != nil
	s.mu.RUnlock()
	if !loaded {
		t.Fatalf("the saved vector index was not loaded: %s", logs.String())
	}
	b := floatBytes(s.idx.vecs.base)
	if len(b) < 1<<20 {
		t.Fatalf("%d bytes of vectors in the mapping", len(b))
	}
	if kb := mappingRSS(t, uintptr(unsafe.Pointer(&b[0]))); kb*1024 > len(b)/2 {
		t.Fatalf("%d KB of the mapping resident after the load, for %d KB of vectors", kb, len(b)/1024)
	}
}
