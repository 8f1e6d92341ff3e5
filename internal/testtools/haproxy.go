package testtools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// haproxyDebian is where Debian's haproxy package installs the binary; a PATH
// without /usr/sbin (a non-root shell) does not find it otherwise.
const haproxyDebian = "/usr/sbin/haproxy"

// HAProxyBinary returns the path of an haproxy binary (on PATH, else Debian's
// /usr/sbin/haproxy) that runs; when there is none it skips the test with a hint
// to run scripts/setup-services.sh, or fails under HELIX_REQUIRE_TOOLS=1.
func HAProxyBinary(t testing.TB) string {
	t.Helper()
	candidates := []string{haproxyDebian}
	if p, err := exec.LookPath("haproxy"); err == nil {
		candidates = append([]string{p}, candidates...)
	}
	var problems []string
	for _, c := range candidates {
		out, err := exec.Command(c, "-v").Output()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s -v: %v", c, err))
			continue
		}
		if !strings.HasPrefix(string(out), "HAProxy version") {
			problems = append(problems, fmt.Sprintf("%s -v printed %q", c, firstLine(out)))
			continue
		}
		return c
	}
	missingService(t, "no haproxy: "+strings.Join(problems, "; "), "run scripts/setup-services.sh to install it")
	return ""
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// HAProxyServer is one server of the load balancer's backend.
type HAProxyServer struct {
	Name string // as HAProxy logs it: "Server backend/<Name> is DOWN"
	Addr string // host:port the requests go to
	// CheckPort is the port of the health check (GET HAProxyOptions.CheckPath on
	// the same host), e.g. a Replica's management port; 0 checks Addr itself.
	CheckPort int
	// SendProxy starts every connection to the server with a PROXY protocol v1
	// header naming the client (send-proxy); checks of Addr itself send one too.
	SendProxy bool
}

// HAProxyOptions configure StartHAProxy. Zero values take the defaults named.
type HAProxyOptions struct {
	Servers []HAProxyServer
	// CheckPath is the health check's path (default /readyz); a server leaves the
	// rotation after Fall failed checks in a row and comes back after Rise good ones.
	CheckPath string
	// CheckInterval is the time between checks of a server (default 200ms; after a
	// first failure HAProxy checks again at half of it, its fastinter).
	CheckInterval time.Duration
	Fall, Rise    int // default 2 and 2
	// StickOnHeader, when set, routes requests that carry this header to the server
	// whose response first carried it (a stick table learning from responses):
	// sticky sessions on Mcp-Session-Id. Requests without it are balanced round robin.
	StickOnHeader string
}

// HAProxy is a running load balancer of StartHAProxy.
type HAProxy struct {
	Addr   string      // 127.0.0.1:port of its frontend
	Config string      // the configuration it runs
	Logs   *SyncBuffer // its stderr: server state changes ("Server be/r1 is DOWN …")
}

// StartHAProxy runs haproxy in the foreground (-db) with a configuration written
// from opts: an HTTP frontend on a free loopback port and one backend that
// balances round robin over opts.Servers with HTTP health checks. It waits until
// the frontend accepts connections; haproxy is stopped when the test ends.
//
// Retries are those that are safe for requests that are not idempotent (an MCP
// tools/call may have run when its connection broke): HAProxy retries on
// another server only when it could not connect (retry-on conn-failure, option
// redispatch), before any byte of the request was sent. A request whose server
// dies after receiving it is answered 502, never sent again.
func StartHAProxy(t testing.TB, opts HAProxyOptions) *HAProxy {
	t.Helper()
	bin := HAProxyBinary(t)
	h := &HAProxy{Addr: "127.0.0.1:" + strconv.Itoa(FreePort(t)), Logs: &SyncBuffer{}}
	h.Config = haproxyConfig(h.Addr, opts)
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(h.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-f", file, "-db")
	cmd.Stdout, cmd.Stderr = h.Logs, h.Logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	WaitForProcessTCP(t, h.Addr, exited, func() string { return h.Logs.String() + "\nconfiguration:\n" + h.Config })
	select {
	case <-exited:
		t.Fatalf("haproxy exited at start:\n%s\nconfiguration:\n%s", h.Logs.String(), h.Config)
	default:
	}
	return h
}

// haproxyConfig writes the configuration of StartHAProxy.
func haproxyConfig(addr string, opts HAProxyOptions) string {
	path := opts.CheckPath
	if path == "" {
		path = "/readyz"
	}
	inter := opts.CheckInterval
	if inter <= 0 {
		inter = 200 * time.Millisecond
	}
	fall, rise := opts.Fall, opts.Rise
	if fall <= 0 {
		fall = 2
	}
	if rise <= 0 {
		rise = 2
	}
	var b strings.Builder
	fmt.Fprintf(&b, `global
    nbthread 1

defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    timeout check 1s
    # Only a connection that could not be made is retried, on another server:
    # nothing was sent. A request that reached a server is never sent twice.
    retries 3
    retry-on conn-failure
    option redispatch 1

frontend helix
    bind %s
    default_backend replicas

backend replicas
    balance roundrobin
    # HTTP/1.1 with a Host: a management server on loopback answers only
    # loopback Host names (DNS-rebinding protection), and 1.0 sends none.
    option httpchk
    http-check send meth GET uri %s ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
    default-server inter %dms fastinter %dms downinter %dms fall %d rise %d
`, addr, path, inter.Milliseconds(), max(inter.Milliseconds()/2, 1), inter.Milliseconds(), fall, rise)
	if h := opts.StickOnHeader; h != "" {
		fmt.Fprintf(&b, `    stick-table type string len 128 size 100k expire 30m
    stick match req.hdr(%[1]s)
    stick store-response res.hdr(%[1]s)
`, h)
	}
	for _, s := range opts.Servers {
		fmt.Fprintf(&b, "    server %s %s check", s.Name, s.Addr)
		if s.CheckPort != 0 {
			fmt.Fprintf(&b, " port %d", s.CheckPort)
		}
		if s.SendProxy {
			b.WriteString(" send-proxy")
			if s.CheckPort == 0 {
				b.WriteString(" check-send-proxy")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
