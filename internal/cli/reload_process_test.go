package cli_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// reloadYAML is served by the reload tests: an http-server:// workflow and a
// tool on a stateless and a stateful MCP server, all answering the version %s.
// extra is appended to the workflows.
const reloadYAML = `helix:
  shutdown_timeout: 20s
  management:
    addr: 127.0.0.1:${env:RELOAD_MGMT}
  mcp:
    servers:
      - id: api
        enabled: true
        addr: 127.0.0.1:${env:RELOAD_MCP}
        stateless: true
      - id: chat
        enabled: true
        addr: 127.0.0.1:${env:RELOAD_CHAT}
workflows:
  - id: answer
    trigger: http-server://127.0.0.1:${env:RELOAD_HTTP}/answer
    steps:
      - set-body: %[1]s
  - id: version
    description: The configuration's version
    trigger: direct://version
    steps:
      - set-body: %[1]s
%[2]s`

// helixProcess is a `helix run` of a reload test.
type helixProcess struct {
	cmd  *exec.Cmd
	file string
	logs *testtools.SyncBuffer
	env  map[string]string
	done chan error
}

func (p *helixProcess) url(port, path string) string {
	return "http://127.0.0.1:" + p.env[port] + path
}

// startHelix writes the config of version into a temporary file and runs helix
// on it with args (after "run").
func startHelix(t *testing.T, version string, args ...string) *helixProcess {
	t.Helper()
	helix := testtools.HelixBinary(t)
	p := &helixProcess{file: filepath.Join(t.TempDir(), "helix.yaml"), logs: &testtools.SyncBuffer{},
		env: map[string]string{}, done: make(chan error, 1)}
	for _, name := range []string{"RELOAD_MGMT", "RELOAD_MCP", "RELOAD_CHAT", "RELOAD_HTTP"} {
		p.env[name] = strconv.Itoa(testtools.FreePort(t))
	}
	p.write(t, version, "")
	p.cmd = exec.Command(helix, append(append([]string{"run"}, args...), p.file)...)
	p.cmd.Env = os.Environ()
	for k, v := range p.env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("helix logs:\n%s", p.logs.String())
		}
	})
	p.waitLog(t, "helix started", 1)
	if s := p.logs.String(); strings.Contains(s, "not started") {
		t.Fatalf("a listener did not start:\n%s", s)
	}
	return p
}

// write replaces the config file atomically (write a temporary file, rename it
// over the config), as editors do.
func (p *helixProcess) write(t *testing.T, version, extra string) {
	t.Helper()
	writeFile(t, p.file, fmt.Sprintf(reloadYAML, version, extra))
}

func writeFile(t *testing.T, file, content string) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

func (p *helixProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// waitLog waits until the logs contain what at least n times.
func (p *helixProcess) waitLog(t *testing.T, what string, n int) {
	t.Helper()
	deadline := time.Now().Add(testtools.StartupBound)
	for strings.Count(p.logs.String(), what) < n {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("helix exited (%v) before logging %q %d times", err, what, n)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("helix did not log %q %d times in time", what, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends helix with SIGTERM and checks it exits cleanly (under -race, a data
// race makes it exit with status 66).
func (p *helixProcess) stop(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("helix exited with %v", err)
		}
	case <-time.After(testtools.StartupBound):
		t.Fatal("helix did not stop within 60s of SIGTERM")
	}
	if s := p.logs.String(); strings.Contains(s, "DATA RACE") || strings.Contains(s, "panic") {
		t.Fatalf("helix logged a race or a panic")
	}
}

func httpAnswer(c *http.Client, url string) (string, error) {
	resp, err := c.Post(url, "text/plain", strings.NewReader(`{"q":1}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return string(b), nil
}

func connectMCP(ctx context.Context, url string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "reload-test", Version: "1"}, nil)
	// A 2025-11-25 session: reloading ends sessions (2026-07-28 clients have none).
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

func toolAnswer(ctx context.Context, s *sdk.ClientSession) (string, error) {
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "version", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) == 0 {
		return "", fmt.Errorf("tool error: %+v", res.Content)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		return "", fmt.Errorf("content %T", res.Content[0])
	}
	return tc.Text, nil
}

// loadClient is one goroutine of load: it calls until stopped and records
// failures and the last answer.
type loadClient struct {
	name   string
	last   atomic.Value // string
	calls  atomic.Int64
	failed atomic.Int64

	mu    sync.Mutex
	first error
}

func (l *loadClient) record(answer string, err error) {
	l.calls.Add(1)
	if err != nil {
		l.failed.Add(1)
		l.mu.Lock()
		if l.first == nil {
			l.first = err
		}
		l.mu.Unlock()
		return
	}
	l.last.Store(answer)
}

func TestReloadUnderLoadFailsNoCall(t *testing.T) {
	t.Parallel()
	p := startHelix(t, "v1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clients []*loadClient
	var wg sync.WaitGroup
	run := func(name string, call func() (string, error)) {
		l := &loadClient{name: name}
		clients = append(clients, l)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				answer, err := call()
				if ctx.Err() != nil {
					return // the test's own cancel, not a failed call
				}
				l.record(answer, err)
			}
		}()
	}
	for i := range 3 {
		// Keep-alive clients: their connections are the ones a reload must drain.
		c := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
		t.Cleanup(c.CloseIdleConnections)
		run(fmt.Sprintf("http-keepalive-%d", i), func() (string, error) { return httpAnswer(c, p.url("RELOAD_HTTP", "/answer")) })
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	run("http-dial-each", func() (string, error) { return httpAnswer(fresh, p.url("RELOAD_HTTP", "/answer")) })
	for i := range 2 {
		s, err := connectMCP(ctx, p.url("RELOAD_MCP", "/mcp"))
		if err != nil {
			t.Fatalf("mcp connect: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		run(fmt.Sprintf("mcp-stateless-%d", i), func() (string, error) {
			cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
			defer ccancel()
			return toolAnswer(cctx, s)
		})
	}

	waitAll := func(version string) {
		t.Helper()
		deadline := time.Now().Add(testtools.StartupBound)
		for _, l := range clients {
			for l.last.Load() != version {
				if time.Now().After(deadline) {
					t.Fatalf("%s still answers %v, want %s", l.name, l.last.Load(), version)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	waitAll("v1")
	const reloads = 5
	for i := 2; i <= reloads+1; i++ {
		version := "v" + strconv.Itoa(i)
		p.write(t, version, "")
		p.signal(t, syscall.SIGHUP)
		p.waitLog(t, "helix reloaded", i-1)
		waitAll(version)
		time.Sleep(100 * time.Millisecond) // load on the new configuration alone, too
	}
	cancel()
	wg.Wait()
	for _, l := range clients {
		if n := l.failed.Load(); n > 0 {
			t.Errorf("%s: %d of %d calls failed across %d reloads; first: %v", l.name, n, l.calls.Load(), reloads, l.first)
		}
		if l.calls.Load() < 10 {
			t.Errorf("%s made only %d calls", l.name, l.calls.Load())
		}
	}
	// Every previous configuration drained and stopped.
	p.waitLog(t, "the previous configuration has drained and stopped", reloads)
	p.stop(t)
}

// A stateful MCP session belongs to the configuration that opened it: after a
// reload the new one does not know it (404, the go-sdk's ErrSessionMissing), and
// the client opens a new session, which the new configuration serves.
func TestReloadEndsStatefulSessions(t *testing.T) {
	t.Parallel()
	p := startHelix(t, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := connectMCP(ctx, p.url("RELOAD_CHAT", "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := toolAnswer(ctx, s); err != nil || got != "v1" {
		t.Fatalf("before the reload: %q, %v", got, err)
	}
	p.write(t, "v2", "")
	p.signal(t, syscall.SIGHUP)
	p.waitLog(t, "helix reloaded", 1)
	// Calls on the old session go on being answered by the old configuration
	// while it drains (on connections it still holds), then fail with
	// ErrSessionMissing once the old configuration stopped.
	for {
		got, err := toolAnswer(ctx, s)
		if err != nil {
			if !errors.Is(err, sdk.ErrSessionMissing) {
				t.Fatalf("the old session after the reload: %v, want ErrSessionMissing", err)
			}
			break
		}
		if got != "v1" {
			t.Fatalf("the old session was answered %q by the new configuration", got)
		}
		if ctx.Err() != nil {
			t.Fatal("the old session was never ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s2, err := connectMCP(ctx, p.url("RELOAD_CHAT", "/mcp"))
	if err != nil {
		t.Fatalf("a new session after the reload: %v", err)
	}
	defer s2.Close()
	if got, err := toolAnswer(ctx, s2); err != nil || got != "v2" {
		t.Fatalf("the new session: %q, %v; want v2", got, err)
	}
	p.stop(t)
}

// --watch reloads on an edit; an invalid edit, and one whose new port cannot be
// bound, leave the running configuration serving, with the reason logged.
func TestReloadWatchInvalidAndFailedStart(t *testing.T) {
	t.Parallel()
	p := startHelix(t, "v1", "--watch")
	p.waitLog(t, "watching the configuration files", 1)
	c := &http.Client{Timeout: 30 * time.Second}
	answers := func(want string) {
		t.Helper()
		deadline := time.Now().Add(testtools.StartupBound)
		for {
			got, err := httpAnswer(c, p.url("RELOAD_HTTP", "/answer"))
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("answer %q, %v; want %s", got, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	answers("v1")

	// An invalid edit: an unknown step. The error is printed as helix validate
	// prints it, with the file, line and column.
	p.write(t, "v2", "  - id: broken\n    trigger: direct://broken\n    steps:\n      - tranform: {}\n")
	p.waitLog(t, "helix reload failed", 1)
	positioned := regexp.MustCompile(regexp.QuoteMeta(p.file) + `:\d+:\d+: .*tranform`)
	if !positioned.MatchString(p.logs.String()) {
		t.Fatalf("no positioned error for the invalid edit in the logs")
	}
	answers("v1")

	// A port the new configuration cannot bind: Start fails, the new app is
	// rolled back, the old one goes on.
	taken := testtools.FreePort(t)
	blocker, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(taken))
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	p.write(t, "v3", fmt.Sprintf("  - id: other\n    trigger: http-server://127.0.0.1:%d/other\n    steps:\n      - set-body: x\n", taken))
	p.waitLog(t, "helix reload failed", 2)
	answers("v1")
	if got, err := toolAnswerOnce(t, p); err != nil || got != "v1" {
		t.Fatalf("the MCP server after the failed start: %q, %v; want v1", got, err)
	}

	// A valid edit is picked up.
	p.write(t, "v4", "")
	p.waitLog(t, "helix reloaded", 1)
	answers("v4")
	p.stop(t)
}

func toolAnswerOnce(t *testing.T, p *helixProcess) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := connectMCP(ctx, p.url("RELOAD_MCP", "/mcp"))
	if err != nil {
		return "", err
	}
	defer s.Close()
	return toolAnswer(ctx, s)
}
