// Package testtools locates the external programs that Helix's integration tests drive
// (Node 22 and the MCP peers installed from npm by scripts/setup-tools.sh) and offers small
// helpers those tests share: free ports, a once-per-process helix binary, waiting for a
// listener.
//
// A missing tool skips the test with a hint to run scripts/setup-tools.sh, unless the
// environment variable HELIX_REQUIRE_TOOLS=1 is set (CI sets it), in which case the test fails:
// CI must never go green by silently skipping the tests that talk to real peers.
package testtools

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// EnvToolsDir overrides where scripts/setup-tools.sh installed the tools.
	EnvToolsDir = "HELIX_TOOLS_DIR"
	// EnvRequireTools turns "tool missing" from a skip into a failure when set to 1.
	EnvRequireTools = "HELIX_REQUIRE_TOOLS"
	// EnvHelixBinary names a helix binary built beforehand for HelixBinary to return instead of
	// building one per test process (make test builds it once, with -race, for every package).
	EnvHelixBinary = "HELIX_TEST_HELIX_BINARY"

	// modulePath identifies the Helix go.mod while walking up to the repository root, so a
	// test run from inside some other module's tree never mistakes that module for ours.
	modulePath = "github.com/arvenza/helix"

	// nodeMajor is the Node major version the conformance suite needs.
	nodeMajor = 22
)

// Package names of the npm peers installed by scripts/setup-tools.sh.
const (
	PkgInspector        = "@modelcontextprotocol/inspector"
	PkgConformance      = "@modelcontextprotocol/conformance"
	PkgServerEverything = "@modelcontextprotocol/server-everything"
)

// Dir returns the tools dir: $HELIX_TOOLS_DIR, or <repo root>/.tools where the repo root is
// found by walking up to Helix's go.mod. It returns ".tools" relative to the working directory
// when no root can be found; the lookups that use it then report the tool as missing.
func Dir() string {
	if d := os.Getenv(EnvToolsDir); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	root, err := RepoRoot()
	if err != nil {
		return ".tools"
	}
	return filepath.Join(root, ".tools")
}

// RepoRoot returns the directory holding Helix's go.mod, searched from the working directory
// upwards and then from this source file's directory upwards (for tests run elsewhere).
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, start := range starts {
		if root, ok := findModuleRoot(start); ok {
			return root, nil
		}
	}
	return "", fmt.Errorf("testtools: no go.mod for module %s found above %v", modulePath, starts)
}

func findModuleRoot(dir string) (string, bool) {
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && declaresModule(data, modulePath) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func declaresModule(gomod []byte, path string) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "module" && strings.Trim(fields[1], `"`) == path {
			return true
		}
	}
	return false
}

// Required reports whether HELIX_REQUIRE_TOOLS=1, i.e. whether missing tools fail tests.
func Required() bool {
	return os.Getenv(EnvRequireTools) == "1"
}

// Missing reports a missing tool: t.Skipf with a hint to run scripts/setup-tools.sh, or
// t.Fatalf when HELIX_REQUIRE_TOOLS=1.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	missingService(t, fmt.Sprintf(format, args...), fmt.Sprintf("tools dir %s; run scripts/setup-tools.sh to install", Dir()))
}

// missingService reports something a test needs that is not there, msg, with a
// hint saying how to get it: a skip, or a failure when HELIX_REQUIRE_TOOLS=1.
func missingService(t testing.TB, msg, hint string) {
	t.Helper()
	msg = fmt.Sprintf("%s (%s)", msg, hint)
	if Required() {
		t.Fatalf("%s; %s=1 so this is a failure, not a skip", msg, EnvRequireTools)
	}
	t.Skipf("%s; skipping (set %s=1 to fail instead)", msg, EnvRequireTools)
}

var nodeCache struct {
	mu      sync.Mutex
	checked map[string]error // node path -> result of the version check
}

// Node returns the path of a Node 22+ binary: the one setup-tools.sh installed
// (<tools>/bin/node), else a `node` on PATH whose major version is at least 22. When neither
// exists it behaves as Missing.
func Node(t testing.TB) string {
	t.Helper()
	var problems []string
	candidates := []string{filepath.Join(Dir(), "bin", "node")}
	if p, err := exec.LookPath("node"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if err := checkNode(c); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		return c
	}
	Missing(t, "no Node %d binary: %s", nodeMajor, strings.Join(problems, "; "))
	return ""
}

func checkNode(path string) error {
	nodeCache.mu.Lock()
	defer nodeCache.mu.Unlock()
	if err, ok := nodeCache.checked[path]; ok {
		return err
	}
	err := probeNode(path)
	if nodeCache.checked == nil {
		nodeCache.checked = map[string]error{}
	}
	nodeCache.checked[path] = err
	return err
}

func probeNode(path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", path, err)
	}
	version := strings.TrimSpace(string(out))
	major, err := nodeMajorVersion(version)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if major < nodeMajor {
		return fmt.Errorf("%s is %s, need v%d or newer", path, version, nodeMajor)
	}
	return nil
}

// nodeMajorVersion parses "v22.11.0" into 22.
func nodeMajorVersion(v string) (int, error) {
	s, ok := strings.CutPrefix(v, "v")
	if !ok {
		return 0, fmt.Errorf("unexpected node version %q", v)
	}
	majorStr, _, _ := strings.Cut(s, ".")
	major, err := strconv.Atoi(majorStr)
	if err != nil {
		return 0, fmt.Errorf("unexpected node version %q: %w", v, err)
	}
	return major, nil
}

// NPMPackageDir returns <tools>/npm/node_modules/<pkg> (pkg may be scoped, e.g.
// "@modelcontextprotocol/inspector"), or behaves as Missing when it has no package.json.
func NPMPackageDir(t testing.TB, pkg string) string {
	t.Helper()
	dir := filepath.Join(Dir(), "npm", "node_modules", filepath.FromSlash(pkg))
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		Missing(t, "npm package %s is not installed: %v", pkg, err)
		return ""
	}
	return dir
}

// NPMBin returns the real path of an installed package's bin script
// (<tools>/npm/node_modules/.bin/<name> with symlinks resolved, so it can be run as
// `node <path>` with the Node from Node), or behaves as Missing.
func NPMBin(t testing.TB, name string) string {
	t.Helper()
	link := filepath.Join(Dir(), "npm", "node_modules", ".bin", name)
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		Missing(t, "npm bin %s is not installed: %v", name, err)
		return ""
	}
	return real
}

// ConformanceAlphaBin returns the real path of the conformance suite's pre-release
// (the 2026-07-28 requirement set) that scripts/setup-tools.sh installs apart from
// the pinned release, in <tools>/conformance-alpha, or behaves as Missing.
func ConformanceAlphaBin(t testing.TB) string {
	t.Helper()
	link := filepath.Join(Dir(), "conformance-alpha", "node_modules", ".bin", "conformance")
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		Missing(t, "the conformance suite's pre-release is not installed: %v", err)
		return ""
	}
	return real
}

// FreePort returns a TCP port on 127.0.0.1 that is free now and that this process has
// not handed out before. The port comes from below the kernel's ephemeral range
// (ip_local_port_range), where ports for outgoing connections and `:0` listeners are
// taken: a port from inside that range, free when asked, is soon taken by one of the
// many connections a parallel test run opens, and the program the test hands it to then
// fails with "address already in use" (it did in CI). Each test binary starts at its own
// random place in the range, so parallel packages rarely try the same ports; a port
// another process holds is skipped by the listen check.
func FreePort(t testing.TB) int {
	t.Helper()
	freePorts.mu.Lock()
	defer freePorts.mu.Unlock()
	if freePorts.next == 0 {
		freePorts.low, freePorts.high = handoutRange()
		freePorts.next = freePorts.low + rand.IntN(freePorts.high-freePorts.low)
	}
	span := freePorts.high - freePorts.low
	for range span {
		port := freePorts.next
		freePorts.next++
		if freePorts.next >= freePorts.high {
			freePorts.next = freePorts.low
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			t.Fatalf("testtools: release free port %d: %v", port, err)
		}
		return port
	}
	t.Fatalf("testtools: no free port in %d-%d", freePorts.low, freePorts.high-1)
	return 0
}

// freePorts is FreePort's cursor: ports are handed out in turn, so one process never
// gets the same port twice until it has gone round the whole range.
var freePorts struct {
	mu              sync.Mutex
	low, high, next int
}

// handoutRange is the range FreePort hands ports from: the 12,000 ports below the start
// of the ephemeral range, or 20000-32767 when the kernel's setting cannot be read.
func handoutRange() (low, high int) {
	low, high = 20000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return low, high
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start < 13000 {
		return low, high
	}
	return start - 12000, start
}

// WaitForTCP waits until addr accepts TCP connections, failing the test after timeout.
func WaitForTCP(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("testtools: %s did not accept connections within %s: %v", addr, timeout, lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var helixBuild struct {
	mu   sync.Mutex
	done bool
	path string
	err  error
}

// binDirPrefix names the per-process directories HelixBinary builds into.
const binDirPrefix = "helix-testtools-"

// HelixBinary builds ./cmd/helix once per test process and returns the binary's path; a build
// error fails the test (and every later caller in the process, without rebuilding). When the test
// runs under -race, helix is built with -race as well: a data race in the helix process then
// prints "WARNING: DATA RACE" on its stderr and makes it exit with status 66.
//
// The binary outlives any single test, so it cannot live in t.TempDir; it goes into
// $TMPDIR/helix-testtools-<pid>, and directories left by earlier, finished test processes are
// removed on the way so repeated runs do not pile up binaries.
//
// When HELIX_TEST_HELIX_BINARY is set, that binary is used and nothing is built: `make test`
// builds helix once (with -race, like the tests) instead of once in each of the packages
// that start helix processes. It must then be an executable file, or every caller fails.
func HelixBinary(t testing.TB) string {
	t.Helper()
	if prebuilt := os.Getenv(EnvHelixBinary); prebuilt != "" {
		if err := checkExecutable(prebuilt); err != nil {
			t.Fatalf("testtools: %s=%s: %v (unset it to build helix for this test run)", EnvHelixBinary, prebuilt, err)
		}
		return prebuilt
	}
	helixBuild.mu.Lock()
	defer helixBuild.mu.Unlock()
	if !helixBuild.done {
		helixBuild.path, helixBuild.err = buildHelix()
		helixBuild.done = true
	}
	if helixBuild.err != nil {
		t.Fatalf("testtools: build helix: %v", helixBuild.err)
	}
	return helixBuild.path
}

// checkExecutable returns an error unless path is a regular file someone may execute.
func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not an executable file (%v)", info.Mode())
	}
	return nil
}

func buildHelix() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	removeStaleBinDirs()
	dir := filepath.Join(os.TempDir(), binDirPrefix+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	out := filepath.Join(dir, "helix")
	// go test puts the bin directory of its own toolchain first on the test's PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build helix: the go command is not on PATH: %w", err)
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goBin, append(args, modulePath+"/cmd/helix")...)
	cmd.Dir = root
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/helix in %s: %w\n%s", root, err, output.String())
	}
	return out, nil
}

// removeStaleBinDirs deletes helix-testtools-<pid> directories whose process has exited.
func removeStaleBinDirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, m := range matches {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m), binDirPrefix))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(m)
		}
	}
}

// SkipAllocsUnderRace skips an allocation-count test in a race-enabled binary: the race
// detector makes sync.Pool drop a random share of what is put back (encoding/json's scanner
// pool among them), so counts there are not the program's. Such tests are named Test…Allocs
// and `make test` runs them once more without -race (the allocs target), so they are
// always checked.
func SkipAllocsUnderRace(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector; `make allocs` runs this test without it")
	}
}
