package cli

import "sync"

// heapFloorBytes is the size of the heap floor.
const heapFloorBytes = 4 << 20

// heapFloor is live for the whole process: a package variable is a GC root.
var (
	//lint:ignore U1000 written and never read on purpose: holding the block is its whole use
	heapFloor     []byte
	heapFloorOnce sync.Once
)

// setHeapFloor sets the heap floor of a serving helix, once per process (reloads
// and tests that run helix in-process call it again), under Go's default pacing
// (GOGC=100). Go starts a collection whenever the heap has doubled, but waits for no
// less than 4 MiB, and a Helix server's live heap is well below that: under load it
// collected far more often than a bare net/http handler, each time stopping the
// world (BENCHMARKS.md, "Heap floor", has the figures). A pointer-free 4 MiB block that is never written (heapFloor)
// counts as live heap, so a collection comes every ~8 MiB of garbage instead; it
// takes address space, not memory (pages never written are never resident). With a
// large live heap (many sessions) it moves the pacing by its 4 MiB only.
//
// It is set once the configuration has started (runFiles), not at process start:
// during start-up the smaller heap goal reuses the same warm pages, where a larger
// one would fault in fresh pages and add milliseconds to the time to the first
// answer. Setting GOGC or GOMEMLIMIT turns the floor off: the operator's pacing is
// used as given. See docs/performance.md ("Garbage collection") and BENCHMARKS.md.
func setHeapFloor(getenv func(string) string) {
	heapFloorOnce.Do(func() { heapFloor = newHeapFloor(getenv) })
}

// newHeapFloor returns the heap floor, or nil when the environment sets the garbage
// collector's pacing itself (an empty value leaves Go's default, as for the runtime).
func newHeapFloor(getenv func(string) string) []byte {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return make([]byte, heapFloorBytes)
}
