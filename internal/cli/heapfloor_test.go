package cli

import (
	"runtime"
	"testing"
)

func TestHeapFloorOnlyWithDefaultPacing(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	if got := len(newHeapFloor(env(nil))); got != heapFloorBytes {
		t.Fatalf("default pacing: floor of %d bytes, want %d", got, heapFloorBytes)
	}
	if got := len(newHeapFloor(env(map[string]string{"GOGC": ""}))); got != heapFloorBytes {
		t.Fatalf("empty GOGC (Go's default): floor of %d bytes, want %d", got, heapFloorBytes)
	}
	for _, kv := range []map[string]string{{"GOGC": "200"}, {"GOGC": "off"}, {"GOMEMLIMIT": "64MiB"}} {
		if f := newHeapFloor(env(kv)); f != nil {
			t.Errorf("%v: floor of %d bytes, want none (the operator's pacing)", kv, len(f))
		}
	}
}

// The floor must count as live heap (that is what spaces the collections out).
func TestHeapFloorCountsAsLiveHeap(t *testing.T) {
	// Not parallel: it measures the whole process.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	floor := newHeapFloor(func(string) string { return "" })
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(floor)
	// Other live objects may have died between the readings: allow for a little.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew < heapFloorBytes*9/10 {
		t.Fatalf("live heap grew by %d bytes after the floor, want about %d", grew, heapFloorBytes)
	}
}
