// Command helix runs Helix workflows and MCP servers; see `helix --help`.
//
// The garbage collector keeps Go's default pacing (GOGC=100). With Helix's own
// Streamable HTTP transport, GOGC=400 measured only ~10 % more tool-call throughput
// (0.32 → 0.36 of a plain net/http handler) but raised 10,000 idle sessions from
// ~134 MiB to ~226 MiB RSS, past the 200 MB budget; operators who want the trade can
// set GOGC (and GOMEMLIMIT) themselves: see docs/performance.md and BENCHMARKS.md.
package main

import (
	"os"

	"github.com/arvenza/helix/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
