// Command helix runs Helix workflows and MCP servers; see `helix --help`.
//
// Garbage collection: Go's default pacing (GOGC=100) with a heap floor. Go starts a
// collection whenever the heap has doubled, but waits for no less than 4 MiB, and a
// Helix server's live heap is 1–2 MiB: under load it collected 60–70 times a second,
// twice as often as a bare net/http handler, each time stopping the world. A
// pointer-free 4 MiB block that is never written (heapFloor) counts as live heap, so
// a collection comes every ~8 MiB of garbage instead; it takes address space, not
// memory (pages never written are never resident). With a large live heap (many
// sessions) it moves the pacing by its 4 MiB only. Setting GOGC or GOMEMLIMIT turns
// the floor off: the operator's pacing is used as given. See docs/performance.md
// ("Garbage collection") and BENCHMARKS.md.
package main

import (
	"os"

	"github.com/arvenza/helix/internal/cli"
)

// heapFloorBytes is the size of the heap floor; see the package comment.
const heapFloorBytes = 4 << 20

// heapFloor is live for the whole process: a package variable is a GC root.
var heapFloor []byte

func main() {
	heapFloor = newHeapFloor(os.Getenv)
	os.Exit(cli.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// newHeapFloor returns the heap floor, or nil when the environment sets the garbage
// collector's pacing itself (an empty value leaves Go's default, as for the runtime).
func newHeapFloor(getenv func(string) string) []byte {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return make([]byte, heapFloorBytes)
}
