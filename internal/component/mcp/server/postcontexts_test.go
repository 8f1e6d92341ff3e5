package server

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"unsafe"
)

type postKey struct{}

// The table of POST contexts finds each POST's context by its tag while many
// POSTs store and delete theirs at once, and nothing for a tag it never had.
func TestPostTableConcurrent(t *testing.T) {
	t.Parallel()
	var tab postTable
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 500 {
				n := uint64(w*1000 + i + 1)
				ctx := context.WithValue(context.Background(), postKey{}, n)
				tab.store(n, ctx)
				tag := strconv.FormatUint(n, 36)
				if got := tab.load(tag); got == nil || got.Value(postKey{}) != n {
					t.Errorf("tag %s: got %v", tag, got)
					return
				}
				tab.delete(n)
				if got := tab.load(tag); got != nil {
					t.Errorf("tag %s found after its POST ended", tag)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, bad := range []string{"", "-1", "not a tag!", "zzzzzzzzzzzzzzzzzzzz"} {
		if got := tab.load(bad); got != nil {
			t.Errorf("load(%q) = %v, want nil", bad, got)
		}
	}
	if size := unsafe.Sizeof(tab.shards[0]); size != 64 {
		t.Errorf("a shard takes %d bytes, want one cache line (64)", size)
	}
}
