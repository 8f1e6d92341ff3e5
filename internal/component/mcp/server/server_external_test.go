package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

// These tests drive the helix binary with the official MCP peers installed by
// scripts/setup-tools.sh: the Inspector CLI and the conformance suite.

// exampleWithAddr copies examples/mcp-server.yaml into a temp dir with its listen
// address replaced (examples stay plain YAML; the port must be free here), or with
// the transport switched to stdio when addr is "".
func exampleWithAddr(t *testing.T, addr string) string {
	t.Helper()
	root, err := testtools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "examples", "mcp-server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	const exampleAddr = `addr: "127.0.0.1:${env:MCP_SERVER_PORT:-3000}"`
	if !strings.Contains(text, exampleAddr) {
		t.Fatalf("examples/mcp-server.yaml no longer contains %s; update this test", exampleAddr)
	}
	if addr == "" {
		var kept []string
		for _, line := range strings.Split(text, "\n") {
			if strings.TrimSpace(line) != exampleAddr {
				kept = append(kept, line)
			}
		}
		text = strings.Replace(strings.Join(kept, "\n"), "transport: http", "transport: stdio", 1)
	} else {
		text = strings.Replace(text, exampleAddr, fmt.Sprintf("addr: %q", addr), 1)
	}
	file := filepath.Join(t.TempDir(), "mcp-server.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// serveExample runs `helix mcp serve` on the example at a free loopback port, with
// the workflows of the extra files beside it, and returns the port; at cleanup it
// sends SIGTERM and requires a clean exit (a data race in the -race binary would
// exit 66).
func serveExample(t *testing.T, extra ...string) int {
	t.Helper()
	port := testtools.FreePort(t)
	startHelix(t, nil, append([]string{"mcp", "serve", exampleWithAddr(t, fmt.Sprintf("127.0.0.1:%d", port))}, extra...)...)
	testtools.WaitForTCP(t, fmt.Sprintf("127.0.0.1:%d", port), testtools.StartupBound)
	return port
}

// startHelix runs the helix binary with args (and env added to the environment)
// until the test ends, then stops it with SIGTERM and expects a clean exit.
func startHelix(t *testing.T, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(testtools.HelixBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr testtools.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("helix %v: %v\n%s", args, err, stderr.String())
			}
		case <-time.After(testtools.StartupBound):
			_ = cmd.Process.Kill()
			<-waited
			t.Errorf("helix %v did not stop on SIGTERM\n%s", args, stderr.String())
		}
	})
}

// inspector runs the MCP Inspector CLI and returns its stdout.
func inspector(t *testing.T, args ...string) string {
	t.Helper()
	node := testtools.Node(t)
	bin := testtools.NPMBin(t, "inspector")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{bin, "--cli"}, args...)...)
	// The inspector keeps a catalog under $HOME; keep it out of the real home.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func checkInspectorTools(t *testing.T, out string) {
	t.Helper()
	var res struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("tools/list output %q: %v", out, err)
	}
	var names []string
	for _, tl := range res.Result.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "calculate_tax,greet" {
		t.Fatalf("tools %v", names)
	}
}

func checkInspectorGreet(t *testing.T, out string) {
	t.Helper()
	var res struct {
		Result struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("tools/call output %q: %v", out, err)
	}
	if res.Result.IsError || len(res.Result.Content) != 1 || res.Result.Content[0].Text != "Hello, Ada!" {
		t.Fatalf("greet result %s", out)
	}
}

func TestInspectorAgainstHelix(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	port := serveExample(t)
	for _, tc := range []struct{ transport, url string }{
		{"http", fmt.Sprintf("http://127.0.0.1:%d/mcp", port)},
		{"sse", fmt.Sprintf("http://127.0.0.1:%d/sse", port)},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			checkInspectorTools(t, inspector(t, "--transport", tc.transport, "--server-url", tc.url, "--method", "tools/list", "--format", "json"))
			checkInspectorGreet(t, inspector(t, "--transport", tc.transport, "--server-url", tc.url,
				"--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada", "--format", "json"))
		})
	}
	t.Run("stdio", func(t *testing.T) {
		// The inspector launches helix itself; it exits when the inspector closes stdin.
		helix := testtools.HelixBinary(t)
		file := exampleWithAddr(t, "")
		checkInspectorTools(t, inspector(t, "--method", "tools/list", "--format", "json", "--", helix, "mcp", "serve", file))
		checkInspectorGreet(t, inspector(t, "--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada",
			"--format", "json", "--", helix, "mcp", "serve", file))
	})
}

// conformanceScenarios are the server scenarios of the official suite
// (@modelcontextprotocol/conformance 0.1.16, --suite all): every one of them
// passes against examples/conformance.yaml's server. The list is checked against
// what the suite ran, so a suite that gains or renames a scenario fails the test
// instead of going unnoticed.
var conformanceScenarios = []string{
	"server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
	"tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
	"tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
	"tools-call-sampling", "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults",
	"server-sse-polling", "server-sse-multiple-streams", "elicitation-sep1330-enums", "resources-list",
	"resources-read-text", "resources-read-binary", "resources-templates-read", "resources-subscribe",
	"resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
	"prompts-get-embedded-resource", "prompts-get-with-image", "dns-rebinding-protection",
}

// serveConformance starts helix mcp serve examples/conformance.yaml on a free
// port and returns the URL of its one server, which serves both protocol eras.
func serveConformance(t *testing.T) string {
	t.Helper()
	root, err := testtools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	port := testtools.FreePort(t)
	// The tasks fixtures keep their durable store in a directory of the test's.
	startHelix(t, []string{fmt.Sprintf("CONFORMANCE_PORT=%d", port), "CONFORMANCE_DATA_DIR=" + t.TempDir()},
		"mcp", "serve", filepath.Join(root, "examples", "conformance.yaml"))
	testtools.WaitForTCP(t, fmt.Sprintf("127.0.0.1:%d", port), testtools.StartupBound)
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// runConformance runs the suite at bin with args against url and returns the
// checks of each scenario it ran. The suite's exit code is not used: it fails on
// any failing scenario, and the callers decide which may fail.
func runConformance(t *testing.T, bin, url string, args ...string) map[string][]conformanceCheck {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, testtools.Node(t), append([]string{bin, "server", "--url", url, "-o", out}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1")
	output, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("conformance %v: %v\n%s", args, ctx.Err(), output)
	}
	results := readConformanceRuns(t, out)
	if len(results) == 0 {
		t.Fatalf("conformance %v wrote no results (%v)\n%s", args, err, output)
	}
	return results
}

// failedChecks returns the checks of one scenario that failed: with strict, every
// check that is neither SUCCESS nor INFO (a WARNING too); else FAILURE only, as
// the suite itself scores a scenario.
func failedChecks(checks []conformanceCheck, strict bool) []string {
	var bad []string
	for _, c := range checks {
		if c.Status == "FAILURE" || strict && c.Status != "SUCCESS" && c.Status != "INFO" {
			bad = append(bad, fmt.Sprintf("%s: %s %s", c.ID, c.Status, c.ErrorMessage))
		}
	}
	return bad
}

func TestConformanceSuiteAgainstHelix(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	suite := testtools.NPMBin(t, "conformance")
	runs := runConformance(t, suite, serveConformance(t), "--suite", "all")
	ran := slices.Sorted(maps.Keys(runs))
	want := slices.Sorted(slices.Values(conformanceScenarios))
	if !slices.Equal(ran, want) {
		t.Errorf("the suite ran %v\nwant %v (update conformanceScenarios and docs/mcp-server.md)", ran, want)
	}
	for _, scenario := range conformanceScenarios {
		checks := runs[scenario]
		if len(checks) == 0 {
			t.Errorf("%s: no checks", scenario)
		}
		for _, bad := range failedChecks(checks, true) {
			t.Errorf("%s: %s", scenario, bad)
		}
	}
}

// alpha20251125ExpectedFailures are the scenarios of the 2025-11-25 requirement
// set (@modelcontextprotocol/conformance 0.2.0-alpha.12, --requirements
// 2025-11-25) that fail against examples/conformance.yaml's server, and why:
// none. A scenario added here must say why, and fails the test once it passes.
var alpha20251125ExpectedFailures = map[string]string{}

// alphaExpectedFailures are the scenarios of the 2026-07-28 requirement set
// (@modelcontextprotocol/conformance 0.2.0-alpha.12, --requirements 2026-07-28)
// that fail against examples/conformance.yaml's server, and why. Every other
// scenario of the set passes; a listed one that starts to pass fails the test
// too, so that this list (and docs/mcp-server.md) stays true.
var alphaExpectedFailures = map[string]string{}

// TestConformanceAlphaAgainstHelix runs the alpha suite's requirement sets of both
// protocol eras, in parallel, against one server: the same URL answers
// initialize sessions (2025-11-25) and sessionless requests (2026-07-28).
func TestConformanceAlphaAgainstHelix(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	suite := testtools.ConformanceAlphaBin(t)
	url := serveConformance(t)
	for _, set := range []struct {
		requirements string
		expected     map[string]string
	}{
		{"2025-11-25", alpha20251125ExpectedFailures},
		{"2026-07-28", alphaExpectedFailures},
	} {
		t.Run(set.requirements, func(t *testing.T) {
			t.Parallel()
			checkAlphaRuns(t, set.requirements, runConformance(t, suite, url, "--requirements", set.requirements), set.expected)
		})
	}
}

// checkAlphaRuns holds the runs of one requirement set to its expected failures:
// an unlisted scenario must pass, a listed one must fail and must have run.
func checkAlphaRuns(t *testing.T, requirements string, runs map[string][]conformanceCheck, expected map[string]string) {
	t.Helper()
	var passed, failed []string
	for _, scenario := range slices.Sorted(maps.Keys(runs)) {
		bad := failedChecks(runs[scenario], false)
		reason, isExpected := expected[scenario]
		switch {
		case len(bad) == 0 && isExpected:
			t.Errorf("%s passes now: take it out of the %s expected failures and docs/mcp-server.md", scenario, requirements)
		case len(bad) > 0 && !isExpected:
			t.Errorf("%s fails:\n  %s", scenario, strings.Join(bad, "\n  "))
		case len(bad) == 0:
			passed = append(passed, scenario)
		default:
			failed = append(failed, scenario+" ("+reason+")")
		}
	}
	for scenario := range expected {
		if _, ok := runs[scenario]; !ok {
			t.Errorf("the suite no longer runs %s: take it out of the %s expected failures", scenario, requirements)
		}
	}
	t.Logf("%s requirement set: %d of %d scenarios pass: %s", requirements, len(passed), len(runs), strings.Join(passed, ", "))
	if len(failed) > 0 {
		t.Logf("%s requirement set, failing as expected: %s", requirements, strings.Join(failed, "; "))
	}
}

type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// conformanceRunDir is the name of a scenario's output directory:
// server-<scenario>-<timestamp>.
var conformanceRunDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// readConformanceRuns reads DIR/server-<scenario>-<timestamp>/checks.json of every
// scenario the suite ran.
func readConformanceRuns(t *testing.T, dir string) map[string][]conformanceCheck {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]conformanceCheck{}
	for _, f := range files {
		m := conformanceRunDir.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			t.Fatalf("unexpected conformance output directory %s", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		runs[m[1]] = append(runs[m[1]], checks...)
	}
	return runs
}
