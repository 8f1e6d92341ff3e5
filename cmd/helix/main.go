// Command helix runs Helix workflows and MCP servers; see `helix --help`.
package main

import (
	"os"
	"runtime/debug"

	"github.com/arvenza/helix/internal/cli"
)

// defaultGCPercent replaces Go's GOGC=100 for this process. An MCP server keeps a
// small live heap and turns over short-lived request garbage, so at 100 the
// collector runs every few dozen requests; 400 measured 0.18 → 0.29 of the plain
// net/http limit for ~11 MiB more peak RSS (BENCHMARKS.md, docs/performance.md).
const defaultGCPercent = 400

func main() {
	// An explicit GOGC (including GOGC=off or GOGC=100) always wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	os.Exit(cli.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
