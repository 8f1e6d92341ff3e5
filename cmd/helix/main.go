// Command helix runs Helix workflows and MCP servers; see `helix --help`.
//
// A serving helix (run, mcp serve) keeps a 4 MiB heap floor under Go's GC pacing
// unless GOGC or GOMEMLIMIT is set: see internal/cli/heapfloor.go and
// docs/performance.md ("Garbage collection").
package main

import (
	"os"

	"github.com/arvenza/helix/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
