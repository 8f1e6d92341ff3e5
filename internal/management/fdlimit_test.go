//go:build linux

package management_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/netguard"
)

// fdChildEnv makes the test binary, re-executed by TestIdleFloodLeavesHealthzAnswering,
// run the server side under a small RLIMIT_NOFILE.
const fdChildEnv = "HELIX_TEST_FD_CHILD"

const (
	fdLimit     = 3000 // the child's RLIMIT_NOFILE
	floodConns  = 3000 // idle connections opened to one listener
	floodPerSrc = 200  // per source address: under max_connections_per_ip (256)
)

// TestIdleFloodLeavesHealthzAnswering opens 3,000 idle connections to one
// listener of a process limited to 3,000 file descriptors (from several
// loopback addresses, so that max_connections_per_ip does not stop them): the
// management server's /healthz and another listener must still answer.
func TestIdleFloodLeavesHealthzAnswering(t *testing.T) {
	if os.Getenv(fdChildEnv) != "" {
		t.Skip("this process is the child")
	}
	if testing.Short() {
		t.Skip("opens 3,000 connections")
	}
	if lim, err := netguard.RaiseFileLimit(); err != nil || lim < floodConns+500 {
		t.Skipf("this process may open %d files (%v): too few to open %d connections", lim, err, floodConns)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFDChild$", "-test.v")
	cmd.Env = append(os.Environ(), fdChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("child exited before printing %q", prefix)
				}
				if rest, found := strings.CutPrefix(l, prefix); found {
					return rest
				}
			case <-timeout:
				t.Fatalf("child did not print %q within 30s", prefix)
			}
		}
	}
	var mgmt, flooded, other string
	if _, err := fmt.Sscan(next("ADDRS "), &mgmt, &flooded, &other); err != nil {
		t.Fatal(err)
	}

	conns := make([]net.Conn, 0, floodConns)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for i := range floodConns {
		d := net.Dialer{Timeout: 5 * time.Second,
			LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i/floodPerSrc))}}
		c, err := d.Dial("tcp", flooded)
		if errors.Is(err, syscall.ECONNRESET) {
			continue // refused at once by a connection cap: fine
		}
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	// The child says when its flooded listener has taken every connection
	// from the kernel (or accept failed: out of file descriptors).
	t.Logf("child: %s", next("FLOODED "))

	client := &http.Client{Timeout: 3 * time.Second}
	for _, u := range []string{"http://" + mgmt + "/healthz", "http://" + other + "/"} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s under an idle flood of another listener: %v", u, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d, want 200", u, resp.StatusCode)
		}
	}
}

// TestFDChild is the server side of TestIdleFloodLeavesHealthzAnswering.
func TestFDChild(t *testing.T) {
	if os.Getenv(fdChildEnv) == "" {
		t.Skip("run by TestIdleFloodLeavesHealthzAnswering")
	}
	lim := syscall.Rlimit{Cur: fdLimit, Max: fdLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := management.New(management.Options{Addr: "127.0.0.1:0", Required: true})
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int64
	done := make(chan string, 1)
	report := func(s string) {
		select {
		case done <- s:
		default:
		}
	}
	serve := func(name string, count bool) string {
		raw, err := netguard.Listen(ctx, "127.0.0.1:0", name)
		if err != nil {
			t.Fatal(err)
		}
		var ln net.Listener = raw
		if count {
			ln = &countingListener{Listener: raw, seen: &seen, report: report}
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "ok")
		})}
		netguard.Configure(srv, netguard.Limits{})
		go func() { _ = srv.Serve(netguard.NewListener(ln, netguard.Limits{}, name, nil)) }()
		return raw.Addr().String()
	}
	flooded, other := serve("flooded", true), serve("other", false)
	fmt.Printf("ADDRS %s %s %s\n", m.Addr(), flooded, other)
	parentDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent is done
		close(parentDone)
	}()
	select {
	case s := <-done:
		fmt.Printf("FLOODED %s\n", s)
		<-parentDone
	case <-parentDone:
	}
	os.Exit(0) // skip goleak: the servers are still running
}

// countingListener reports when floodConns connections were accepted, or
// accept failed.
type countingListener struct {
	net.Listener
	seen   *atomic.Int64
	report func(string)
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		l.report(fmt.Sprintf("accept failed after %d connections: %v", l.seen.Load(), err))
		return nil, err
	}
	if l.seen.Add(1) == floodConns {
		l.report(fmt.Sprintf("%d connections accepted", floodConns))
	}
	return c, nil
}
