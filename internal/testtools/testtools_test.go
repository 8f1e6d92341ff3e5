package testtools

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNodeIsVersion22(t *testing.T) {
	node := Node(t)
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	major, err := nodeMajorVersion(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if major < 22 {
		t.Fatalf("Node(t) = %s reports %s, want v22 or newer", node, out)
	}
}

func TestServerEverythingInstalled(t *testing.T) {
	dir := NPMPackageDir(t, PkgServerEverything)
	bin := NPMBin(t, "mcp-server-everything")
	if !strings.HasPrefix(bin, dir+string(filepath.Separator)) {
		t.Fatalf("bin %s is not inside package dir %s", bin, dir)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin script: %v", err)
	}
}

// TestServerEverythingSpeaksMCP starts the reference server over stdio with Node 22 and checks
// that it answers an initialize request, proving the installed peer really runs.
func TestServerEverythingSpeaksMCP(t *testing.T) {
	node := Node(t)
	bin := NPMBin(t, "mcp-server-everything")
	cmd := exec.Command(node, bin, "stdio")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":` +
		`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"testtools","version":"0"}}}` + "\n")
	// With stdin at EOF the server exits after answering, so Output returns on its own.
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("server-everything stdio: %v (stdout %q)", err, out)
	}
	if !strings.Contains(string(out), `"id":1`) || !strings.Contains(string(out), `"serverInfo"`) {
		t.Fatalf("no initialize result on stdout: %q", out)
	}
}

func TestNPMPackageDirMissingSkips(t *testing.T) {
	t.Setenv(EnvRequireTools, "")
	t.Setenv(EnvToolsDir, t.TempDir())
	ran := false
	// A subtest isolates the Skip so the parent can observe it.
	t.Run("missing", func(t *testing.T) {
		ran = true
		NPMPackageDir(t, "@example/not-installed")
		t.Error("NPMPackageDir returned for a missing package instead of skipping")
	})
	if !ran {
		t.Fatal("subtest did not run")
	}
}

func TestMissingFailsWhenRequired(t *testing.T) {
	t.Setenv(EnvRequireTools, "1")
	t.Setenv(EnvToolsDir, t.TempDir())
	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	// Fatalf calls runtime.Goexit in the real testing.T; the recorder does the same, so run the
	// call on its own goroutine and wait for it to end.
	go func() {
		defer close(done)
		NPMBin(rec, "not-installed")
	}()
	<-done
	if !rec.failed || rec.skipped {
		t.Fatalf("with %s=1 a missing tool must fail, got failed=%v skipped=%v", EnvRequireTools, rec.failed, rec.skipped)
	}
	if !strings.Contains(rec.msg, "setup-tools.sh") {
		t.Fatalf("failure message lacks the setup hint: %q", rec.msg)
	}
}

// recordingTB captures Fatalf/Skipf instead of ending the real test.
type recordingTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recordingTB) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestDirHonoursEnvAndRepoRoot(t *testing.T) {
	custom := t.TempDir()
	t.Setenv(EnvToolsDir, custom)
	if got := Dir(); got != custom {
		t.Fatalf("Dir() = %s, want %s", got, custom)
	}
	t.Setenv(EnvToolsDir, "")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("RepoRoot() = %s has no go.mod: %v", root, err)
	}
	if got, want := Dir(), filepath.Join(root, ".tools"); got != want {
		t.Fatalf("Dir() = %s, want %s", got, want)
	}
}

func TestDeclaresModule(t *testing.T) {
	cases := []struct {
		gomod string
		want  bool
	}{
		{"module github.com/arvenza/helix\n\ngo 1.26\n", true},
		{"// comment\nmodule \"github.com/arvenza/helix\"\n", true},
		{"module github.com/arvenza/helix/v2\n", false},
		{"module example.com/other\n", false},
		{"", false},
	}
	for _, c := range cases {
		if got := declaresModule([]byte(c.gomod), modulePath); got != c.want {
			t.Errorf("declaresModule(%q) = %v, want %v", c.gomod, got, c.want)
		}
	}
}

func TestNodeMajorVersion(t *testing.T) {
	for in, want := range map[string]int{"v22.23.5": 22, "v20.20.2": 20, "v100.0.0": 100} {
		got, err := nodeMajorVersion(in)
		if err != nil || got != want {
			t.Errorf("nodeMajorVersion(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"22.1.0", "vX.1", ""} {
		if _, err := nodeMajorVersion(bad); err == nil {
			t.Errorf("nodeMajorVersion(%q) succeeded, want error", bad)
		}
	}
}

func TestFreePortAndWaitForTCP(t *testing.T) {
	port := FreePort(t)
	if port <= 0 || port > 65535 {
		t.Fatalf("FreePort() = %d", port)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("port %d from FreePort is not bindable: %v", port, err)
	}
	defer l.Close()
	WaitForTCP(t, addr, 10*time.Second)
}

// TestFreePortStaysOutOfTheEphemeralRange: the ports come from below the range the
// kernel takes outgoing connections' ports from, are never handed out twice, and a port
// someone holds is skipped.
func TestFreePortStaysOutOfTheEphemeralRange(t *testing.T) {
	low, high := handoutRange()
	seen := map[int]bool{}
	for range 200 {
		port := FreePort(t)
		if port < low || port >= high {
			t.Fatalf("FreePort() = %d, outside %d-%d", port, low, high-1)
		}
		if seen[port] {
			t.Fatalf("FreePort() handed out %d twice", port)
		}
		seen[port] = true
	}
	freePorts.mu.Lock()
	held := freePorts.next
	freePorts.mu.Unlock()
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(held)))
	if err != nil {
		t.Skipf("port %d is taken by someone else: %v", held, err)
	}
	defer l.Close()
	if port := FreePort(t); port == held {
		t.Fatalf("FreePort() = %d, a port that is being listened on", port)
	}
}

func TestWaitForTCPTimesOut(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitForTCP(rec, addr, 200*time.Millisecond)
	}()
	<-done
	if !rec.failed {
		t.Fatal("WaitForTCP on a closed port did not fail")
	}
}

func TestHelixBinaryBuildsOnce(t *testing.T) {
	first := HelixBinary(t)
	info, err := os.Stat(first)
	if err != nil {
		t.Fatalf("helix binary: %v", err)
	}
	if info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("helix binary %s is not executable (%v)", first, info.Mode())
	}
	if second := HelixBinary(t); second != first {
		t.Fatalf("second HelixBinary() = %s, want the cached %s", second, first)
	}
}

func TestRemoveStaleBinDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// A pid above Linux's maximum (2^22) cannot belong to a live process.
	dead := filepath.Join(tmp, binDirPrefix+"99999999")
	own := filepath.Join(tmp, binDirPrefix+strconv.Itoa(os.Getpid()))
	other := filepath.Join(tmp, binDirPrefix+"notapid")
	for _, d := range []string{dead, own, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeStaleBinDirs()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("dir of an exited process survived: %v", err)
	}
	for _, d := range []string{own, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// TestWaitForProcessTCPStopsWhenTheProcessExits: a process that exited is reported at
// once, with its output, instead of after a long wait.
func TestWaitForProcessTCPStopsWhenTheProcessExits(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	rec := &recordingTB{TB: t}
	exited := make(chan struct{})
	close(exited)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitForProcessTCP(rec, addr, exited, func() string { return "boom" })
	}()
	<-done
	if !rec.failed || time.Since(start) > 10*time.Second {
		t.Fatalf("failed %v after %s, want a failure at once", rec.failed, time.Since(start))
	}
}

// TestWaitForProcessTCPWaitsForASlowStart: a process that starts listening only
// after a while (here 1.5 s, standing for a loaded machine) is waited for.
func TestWaitForProcessTCPWaitsForASlowStart(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	go func() {
		time.Sleep(1500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
	}()
	WaitForProcessTCP(t, addr, make(chan struct{}), nil)
}

// deadlineTB is a recordingTB whose test deadline is near, so that a helper bounded by
// the test's deadline gives up quickly.
type deadlineTB struct {
	*recordingTB
	deadline time.Time
}

func (d deadlineTB) Deadline() (time.Time, bool) { return d.deadline, true }

// TestEventuallyReturnsOnceTheConditionHolds: a condition that becomes true after a few
// checks ends the wait then, without failing.
func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	calls := 0
	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(rec, "three checks", func() bool { calls++; return calls == 3 })
	}()
	<-done
	if rec.failed || calls != 3 {
		t.Fatalf("failed %v (%q) after %d checks, want success at the third", rec.failed, rec.msg, calls)
	}
}

// TestEventuallyFailsAtTheTestDeadline: a condition that never holds fails the test,
// naming what was awaited, before the test's own deadline (less its margin) passes.
func TestEventuallyFailsAtTheTestDeadline(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	tb := deadlineTB{recordingTB: rec, deadline: time.Now().Add(startupMargin + 300*time.Millisecond)}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(tb, "the moon to turn blue", func() bool { return false })
	}()
	<-done
	if !rec.failed || !strings.Contains(rec.msg, "the moon to turn blue") {
		t.Fatalf("failed %v with %q, want a failure naming what was awaited", rec.failed, rec.msg)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("gave up after %s, want about 300ms (the test's deadline less the margin)", waited)
	}
}

// TestHelixBinaryUsesThePrebuiltOne: with HELIX_TEST_HELIX_BINARY set, HelixBinary returns
// that file without building, and a path that is no executable fails with the variable's
// name in the message.
func TestHelixBinaryUsesThePrebuiltOne(t *testing.T) {
	prebuilt := filepath.Join(t.TempDir(), "helix")
	if err := os.WriteFile(prebuilt, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvHelixBinary, prebuilt)
	if got := HelixBinary(t); got != prebuilt {
		t.Fatalf("HelixBinary() = %s, want the prebuilt %s", got, prebuilt)
	}

	for _, bad := range []string{filepath.Join(t.TempDir(), "missing"), t.TempDir()} {
		t.Setenv(EnvHelixBinary, bad)
		rec := &recordingTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			HelixBinary(rec)
		}()
		<-done
		if !rec.failed || !strings.Contains(rec.msg, EnvHelixBinary) {
			t.Errorf("%s=%s: failed %v with %q, want a failure naming the variable", EnvHelixBinary, bad, rec.failed, rec.msg)
		}
	}
}
