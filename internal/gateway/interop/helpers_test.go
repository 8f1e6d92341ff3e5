// Package interop runs real MCP clients (the go-sdk, the TypeScript SDK, the
// MCP Inspector CLI) and the official conformance suite through a Helix
// gateway (the helix binary) in front of real MCP servers: server-everything
// over stdio and Streamable HTTP, a go-sdk server, and Helix's own conformance
// fixture server. It shows that the gateway is transparent: what works
// straight against an upstream works through the gateway.
package interop

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

// repoFile returns the path of a file of the repository.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := testtools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, filepath.FromSlash(rel))
}

// process is a program a test started, stopped at cleanup.
type process struct {
	cmd    *exec.Cmd
	logs   *testtools.SyncBuffer
	exited chan struct{}
	err    error // set before exited is closed
}

// start runs name with args (and env added to the environment) until the test
// ends, then stops it with SIGTERM. With clean, it must exit 0 (the -race helix
// binary exits 66 on a data race); a Node server is only required to stop.
func start(t *testing.T, clean bool, env []string, name string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(name, args...), logs: &testtools.SyncBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			if clean && p.err != nil {
				t.Errorf("%s %v: %v\n%s", filepath.Base(name), args, p.err, p.logs.String())
			}
		case <-time.After(testtools.StartupBound):
			_ = p.cmd.Process.Kill()
			<-p.exited
			t.Errorf("%s %v did not stop on SIGTERM\n%s", filepath.Base(name), args, p.logs.String())
		}
	})
	return p
}

// listening waits until the process listens on 127.0.0.1:port.
func (p *process) listening(t *testing.T, port int) {
	t.Helper()
	testtools.WaitForProcessTCP(t, fmt.Sprintf("127.0.0.1:%d", port), p.exited, p.logs.String)
}

// startGateway runs `helix run` on examples/gateway.yaml in front of the MCP
// server at upstreamURL, with tool and prompt names prefixed by prefix, and
// returns the gateway's MCP endpoint.
func startGateway(t *testing.T, upstreamURL, prefix string) string {
	t.Helper()
	port := testtools.FreePort(t)
	p := start(t, true, []string{
		"UPSTREAM_URL=" + upstreamURL,
		"UPSTREAM_PREFIX=" + prefix,
		fmt.Sprintf("GATEWAY_PORT=%d", port),
	}, testtools.HelixBinary(t), "run", repoFile(t, "examples/gateway.yaml"))
	p.listening(t, port)
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// startGatewayYAML runs `helix run` on a gateway configuration written for the
// test; GATEWAY_PORT in it is the gateway's port. It returns the MCP endpoint.
func startGatewayYAML(t *testing.T, yaml string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	port := testtools.FreePort(t)
	p := start(t, true, []string{fmt.Sprintf("GATEWAY_PORT=%d", port)}, testtools.HelixBinary(t), "run", file)
	p.listening(t, port)
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// stdioEverythingGateway is a gateway whose upstream is server-everything over
// stdio, started by the gateway (yamlQuote keeps the paths intact).
func stdioEverythingGateway(t *testing.T, prefix string) string {
	t.Helper()
	node := testtools.Node(t)
	bin := testtools.NPMBin(t, "mcp-server-everything")
	return startGatewayYAML(t, fmt.Sprintf(`
mcps:
  - id: gateway
    addr: "127.0.0.1:${env:GATEWAY_PORT}"
    upstreams:
      - id: everything
        command: %s
        args: [%s, stdio]
        prefix: %s
`, yamlQuote(node), yamlQuote(bin), yamlQuote(prefix)))
}

func yamlQuote(s string) string { return fmt.Sprintf("%q", s) }

// startEverythingHTTP runs server-everything's Streamable HTTP transport on a
// free port and returns its MCP endpoint. A port another test took between
// FreePort and the server's listen makes the server exit: it is started again
// on another port.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	node := testtools.Node(t)
	bin := testtools.NPMBin(t, "mcp-server-everything")
	for attempt := 1; ; attempt++ {
		port := testtools.FreePort(t)
		p := start(t, false, []string{fmt.Sprintf("PORT=%d", port)}, node, bin, "streamableHttp")
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		started := time.Now()
		for {
			if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				_ = conn.Close()
				return fmt.Sprintf("http://%s/mcp", addr)
			}
			select {
			case <-p.exited:
				if attempt == 3 {
					t.Fatalf("server-everything exited before it listened, three times:\n%s", p.logs.String())
				}
			case <-time.After(50 * time.Millisecond):
				if time.Since(started) > testtools.StartupBound {
					t.Fatalf("server-everything did not listen on %s:\n%s", addr, p.logs.String())
				}
				continue
			}
			break
		}
	}
}

// serveConformance runs `helix mcp serve examples/conformance.yaml` on a free
// port and returns its endpoint: the conformance suite's fixture server.
func serveConformance(t *testing.T) string {
	t.Helper()
	port := testtools.FreePort(t)
	p := start(t, true, []string{fmt.Sprintf("CONFORMANCE_PORT=%d", port), "CONFORMANCE_DATA_DIR=" + t.TempDir()},
		testtools.HelixBinary(t), "mcp", "serve", repoFile(t, "examples/conformance.yaml"))
	p.listening(t, port)
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// runNode runs node with args (a script of testdata or an npm bin) and returns
// its stdout; a failing exit fails the test with both outputs.
func runNode(t *testing.T, timeout time.Duration, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testtools.Node(t), args...)
	// The inspector keeps a catalog under $HOME; keep it out of the real home.
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1"), env...)
	var stdout, stderr testtools.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
