// Command helix runs Helix workflows and MCP servers; see `helix --help`.
package main

import (
	"os"

	"github.com/arvenza/helix/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
