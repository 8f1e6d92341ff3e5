package testtools

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvRedisServer names the variable that points the tests at a redis-server binary
// other than the one on PATH (Debian's /usr/bin/redis-server, which
// scripts/setup-services.sh installs).
const EnvRedisServer = "HELIX_REDIS_SERVER"

// RedisServer is a redis-server a test started with [StartRedis]: no persistence, in
// a temporary directory, on a loopback port. Stop ends it early (an outage); the
// test's cleanup stops it otherwise.
type RedisServer struct {
	// Addr is host:port; URL is redis://Addr/0.
	Addr, URL string

	cmd  *exec.Cmd
	log  *SyncBuffer
	once sync.Once
	done chan struct{}
}

// RedisServerBinary returns the path of redis-server: $HELIX_REDIS_SERVER, else the
// one on PATH, else /usr/bin/redis-server. When none exists it skips the test with a
// hint, or fails it under HELIX_REQUIRE_TOOLS=1.
func RedisServerBinary(t testing.TB) string {
	t.Helper()
	candidates := []string{os.Getenv(EnvRedisServer)}
	if p, err := exec.LookPath("redis-server"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/redis-server")
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if info, err := os.Stat(c); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return c
		}
	}
	hint := "no redis-server binary (set " + EnvRedisServer + ", or install Debian's redis-server: scripts/setup-services.sh)"
	if Required() {
		t.Fatalf("%s; %s=1 so this is a failure, not a skip", hint, EnvRequireTools)
	}
	t.Skipf("%s; skipping (set %s=1 to fail instead)", hint, EnvRequireTools)
	return ""
}

// StartRedis starts a redis-server on a free 127.0.0.1 port, without snapshots or an
// append-only file, in a temporary directory, and waits until it answers PING. It is
// stopped when the test ends. A missing binary skips (or fails, see
// [RedisServerBinary]); a server that does not come up fails the test with its log.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	bin := RedisServerBinary(t)
	var lastErr error
	// The free port may be taken before redis binds it: a few tries with new ports.
	for range 3 {
		s, err := startRedis(t, bin)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("testtools: redis-server did not start: %v", lastErr)
	return nil
}

func startRedis(t testing.TB, bin string) (*RedisServer, error) {
	dir := t.TempDir()
	port := FreePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &RedisServer{Addr: addr, URL: "redis://" + addr + "/0", log: &SyncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--daemonize", "no", "--logfile", "")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	deadline := startupDeadline(t)
	for {
		err := s.Ping()
		if err == nil {
			// A PONG from another redis-server that holds the port (ours
			// could not bind it and is exiting) would make tests share a
			// store: check that the answer is our process's.
			if err = s.checkPID(); err == nil {
				return s, nil
			}
			s.Stop()
			return nil, err
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("redis-server exited: %v\n%s", err, s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("no PONG from %s by %s: %v\n%s", addr, deadline.Format(time.TimeOnly), err, s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkPID asks the server on s.Addr for its process id (INFO server) and
// compares it with the redis-server s started.
func (s *RedisServer) checkPID() error {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(head), "$"))
	if err != nil || !strings.HasPrefix(head, "$") {
		return fmt.Errorf("INFO server answered %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	want := "process_id:" + strconv.Itoa(s.cmd.Process.Pid)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.TrimSpace(line) == want {
			return nil
		}
	}
	return fmt.Errorf("the redis-server on %s is not the one started here (pid %d): the port was taken", s.Addr, s.cmd.Process.Pid)
}

// Ping sends PING on a connection of its own and checks for PONG.
func (s *RedisServer) Ping() error {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for it; the
// port then refuses connections. It is idempotent.
func (s *RedisServer) Stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// Log is what the server wrote so far, for failure messages.
func (s *RedisServer) Log() string { return s.log.String() }
