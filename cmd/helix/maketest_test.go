package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each step of make test before the last says how long it took, on stderr, and
// passes its exit status on.
func TestTimedStepReportsItsDuration(t *testing.T) {
	start := strconv.FormatInt(time.Now().Unix()-7, 10)
	for _, c := range []struct {
		cmd      string
		wantCode int
	}{{"true", 0}, {"exit 3", 3}} {
		cmd := exec.Command("bash", "scripts/timed-step.sh", "lint", "bash", "-c", c.cmd)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "HELIX_TEST_START="+start)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.wantCode {
			t.Errorf("%s: exit %d, want %d", c.cmd, code, c.wantCode)
		}
		if !regexp.MustCompile(`^make test: lint (took|failed after) \d+ s \((7|8|9) s so far\)\n$`).Match(out) {
			t.Errorf("%s: output %q", c.cmd, out)
		}
	}
}

// The race-enabled go test run is announced with the time so far and an estimate,
// and nothing follows go test's own output (CI reads its last lines); the run's
// duration is kept for the next estimate.
func TestRaceTestStepEndsWithGoTestOutput(t *testing.T) {
	state := t.TempDir()
	run := func(fake string) (string, int) {
		cmd := exec.Command("bash", "scripts/race-test.sh", "bash", "-c", fake)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "HELIX_TEST_START="+strconv.FormatInt(time.Now().Unix()-125, 10),
			"HELIX_TOOLS_DIR="+state)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	out, code := run("sleep 1; echo 'ok  github.com/arvenza/helix/pkg/x 0.1s'")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if !regexp.MustCompile(`^make test: 12[5-7] s so far; the race-enabled go test run follows \(about \d+ min\)\nok  github.com/arvenza/helix/pkg/x 0.1s\n$`).MatchString(out) {
		t.Errorf("output %q", out)
	}
	b, err := os.ReadFile(filepath.Join(state, "race-test-seconds"))
	if err != nil {
		t.Fatalf("the duration was not kept: %v", err)
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || secs < 1 || secs > 30 {
		t.Errorf("kept duration %q", b)
	}
	// The next run's estimate comes from the kept duration; a failure passes on.
	if err := os.WriteFile(filepath.Join(state, "race-test-seconds"), []byte("1500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = run("echo FAIL; exit 1")
	if code != 1 || !strings.Contains(out, "(about 25 min)") || !strings.HasSuffix(out, "FAIL\n") {
		t.Errorf("exit %d, output %q; want exit 1, about 25 min, FAIL last", code, out)
	}
}

// make test keeps its shape: .ci/run calls exactly `make test`, each step before
// the last is timed, and the recipe's last command is the race-enabled go test run,
// through race-test.sh. The Makefile is read, not run (make -n would still run
// the recipe lines that call $(MAKE), and with them the whole test suite).
func TestMakeTestEndsWithTheRaceRun(t *testing.T) {
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "\nexec make test\n") {
		t.Error(".ci/run no longer runs exactly `make test`")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(mk), "\ntest:\n")
	if !ok {
		t.Fatal("no test: target in the Makefile")
	}
	var recipe []string
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "\t") {
			break
		}
		recipe = append(recipe, strings.TrimSpace(line))
	}
	if len(recipe) == 0 {
		t.Fatal("the test: target has no recipe")
	}
	last := recipe[len(recipe)-1]
	if !strings.HasPrefix(strings.TrimPrefix(last, "HELIX_REQUIRE_TOOLS=1 "), "scripts/race-test.sh $(GO) test -race ") {
		t.Errorf("the last command of make test is %q; want the race-enabled go test through scripts/race-test.sh", last)
	}
	body := strings.Join(recipe, "\n")
	for _, step := range []string{"setup-services", "setup-tools", "postgres", "lint", "fuzz-smoke", "bench-smoke", "bench-test", "allocs"} {
		if !strings.Contains(body, "scripts/timed-step.sh "+step+" ") {
			t.Errorf("make test runs %s without timing it", step)
		}
	}
}
