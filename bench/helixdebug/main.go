// Command helixdebug is the helix command with Go's profiler beside it, for
// profiling a serving Helix under the benchmarks' load: with HELIX_DEBUG_ADDR set
// it serves /debug/pprof/ and /debug/vars (expvar's memstats, which mcpload
// -memstats reads for allocations per call) on that address, then runs the same
// CLI as cmd/helix. HELIX_DEBUG_CONTENTION=1 also records mutex and blocking
// profiles (they cost a little on every contended lock, so they are off
// otherwise). Measurements of Helix itself use the helix binary; this one only
// says where its time goes (scripts/bench-concurrency.sh, PROFILE=1).
//
//	HELIX_DEBUG_ADDR=127.0.0.1:6060 HELIX_BENCH_ADDR=127.0.0.1:3100 helixdebug mcp serve bench/echo.yaml
//	go tool pprof -top http://127.0.0.1:6060/debug/pprof/profile?seconds=10
package main

import (
	"expvar"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"

	"github.com/arvenza/helix/internal/cli"
)

func main() {
	if addr := os.Getenv("HELIX_DEBUG_ADDR"); addr != "" {
		if os.Getenv("HELIX_DEBUG_CONTENTION") == "1" {
			runtime.SetMutexProfileFraction(10)
			runtime.SetBlockProfileRate(10_000) // one sample per 10 µs blocked
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.Handle("/debug/vars", expvar.Handler())
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helixdebug: HELIX_DEBUG_ADDR:", err)
			os.Exit(2)
		}
		go func() { _ = http.Serve(ln, mux) }()
	}
	os.Exit(cli.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
