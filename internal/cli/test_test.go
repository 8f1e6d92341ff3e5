package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
)

// TestHelixTest runs `helix test` through the command line over the files in
// testdata/wftest: cases that pass, cases that fail (with the reason), invalid test
// files (positioned errors, exit 2), mocks that record their calls, a direct:// call
// to another workflow, and a workflow that never answers (the per-case timeout).
func TestHelixTest(t *testing.T) {
	t.Parallel()
	const dir = "testdata/wftest/"
	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  []string // lines (or parts of lines) that must be in stdout, in order
		stderr  []string // the same for stderr
		notOut  []string // must not be in stdout
		maxWait time.Duration
	}{
		{
			name: "every case passes",
			args: []string{"test", dir + "pass.yaml"},
			code: ExitOK,
			stdout: []string{
				"PASS " + dir + "pass.yaml:23:5: greets by name",
				"PASS " + dir + "pass.yaml:30:5: greets the world without a name",
				"PASS " + dir + "pass.yaml:39:5: calls greet over direct and audits the greeting",
				"PASS " + dir + "pass.yaml:57:5: an audit failure fails the workflow",
				"PASS " + dir + "pass.yaml:68:5: a mock stands in for another workflow",
				"ok: 5 tests passed",
			},
		},
		{
			name: "failing cases say why",
			args: []string{"test", dir + "fail.yaml"},
			code: ExitRuntime,
			stdout: []string{
				"PASS " + dir + "fail.yaml:14:5: passes",
				"FAIL " + dir + "fail.yaml:19:5: wrong greeting",
				`body.greeting: got "Hello, Ada!", want "Hi, Ada!"`,
				`got body: {"greeting":"Hello, Ada!"}`,
				"FAIL " + dir + "fail.yaml:24:5: expects an error that never comes",
				`want an error containing "boom", the workflow succeeded`,
				"FAIL " + dir + "fail.yaml:29:5: the mock is called less often than expected",
				"mock http://api.example.com/audit (" + dir + "fail.yaml:33:9): called 1 time, want 2",
				`mock http://api.example.com/audit (` + dir + `fail.yaml:33:9): call 1: body.name: got "Ada", want "Bob"`,
				"FAIL: 3 of 4 tests failed",
			},
		},
		{
			name: "a workflow that never answers fails at its timeout",
			args: []string{"test", dir + "hang.yaml"},
			code: ExitRuntime,
			stdout: []string{
				"FAIL " + dir + "hang.yaml:8:5: the slow service never answers",
				"timed out after 300ms",
				"FAIL: 1 of 1 test failed",
			},
			maxWait: 5 * time.Second,
		},
		{
			name:   "the default timeout is a flag",
			args:   []string{"test", "--timeout", "200ms", dir + "pass.yaml", dir + "hang.yaml"},
			code:   ExitRuntime,
			stdout: []string{"PASS " + dir + "pass.yaml:23:5: greets by name", "timed out after 300ms", "FAIL: 1 of 6 tests failed"},
		},
		{
			name: "--run picks cases by name",
			args: []string{"test", "--run", "world|direct", dir + "pass.yaml"},
			code: ExitOK,
			stdout: []string{"PASS " + dir + "pass.yaml:30:5: greets the world",
				"PASS " + dir + "pass.yaml:39:5: calls greet over direct", "ok: 2 tests passed"},
			notOut: []string{"greets by name", "audit failure"},
		},
		{
			name:   "a sibling NAME_test.yaml is loaded with NAME.yaml",
			args:   []string{"test", dir + "sibling.yaml"},
			code:   ExitOK,
			stdout: []string{"PASS " + dir + "sibling_test.yaml:3:5: shouts", "ok: 1 test passed"},
		},
		{
			name:   "a file given twice is loaded once",
			args:   []string{"test", dir + "sibling.yaml", dir + "sibling_test.yaml", dir + "sibling.yaml"},
			code:   ExitOK,
			stdout: []string{"ok: 1 test passed"},
		},
		{
			name:   "--run matching nothing",
			args:   []string{"test", "--run", "nothing like this", dir + "pass.yaml"},
			code:   ExitConfig,
			stdout: []string{`no test matches --run "nothing like this"`},
		},
		{
			name:   "a bad --run",
			args:   []string{"test", "--run", "(", dir + "pass.yaml"},
			code:   ExitConfig,
			stderr: []string{"--run: error parsing regexp"},
		},
		{
			name:   "a negative --timeout",
			args:   []string{"test", "--timeout", "-1s", dir + "pass.yaml"},
			code:   ExitConfig,
			stderr: []string{"--timeout cannot be negative"},
		},
		{
			name:   "and NAME.yaml with NAME_test.yaml",
			args:   []string{"test", dir + "sibling_test.yaml"},
			code:   ExitOK,
			stdout: []string{"PASS " + dir + "sibling_test.yaml:3:5: shouts"},
		},
		{
			name: "an invalid test file is a configuration error",
			args: []string{"test", dir + "invalid.yaml"},
			code: ExitConfig,
			stderr: []string{
				dir + `invalid.yaml:10:14: tests[0].expect: unknown key "bodyy" in a test's expect (did you mean "body"?)`,
				dir + `invalid.yaml:12:15: tests[1].workflow: no workflow or tool "gret" (did you mean "greet"?)`,
				dir + `invalid.yaml:16:14: tests[2].mocks[0].uri: no component for scheme "nope"`,
				dir + `invalid.yaml:18:9: tests[2].mocks[1]: a mock is missing required key "uri"`,
				dir + `invalid.yaml:19:28: tests[2].expect.body_matches: body_matches is not a valid regular expression`,
				dir + `invalid.yaml:20:5: tests[3]: a test is missing required key "name"`,
			},
		},
		{
			name:   "a file without tests says so",
			args:   []string{"test", "../../examples/quickstart.yaml"},
			code:   ExitConfig,
			stderr: []string{"no tests in ../../examples/quickstart.yaml", "add a tests: list"},
		},
		{
			name:   "a missing file",
			args:   []string{"test", dir + "missing.yaml"},
			code:   ExitConfig,
			stderr: []string{"missing.yaml"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := execute(t, tc.args...)
			if tc.maxWait > 0 && time.Since(start) > tc.maxWait {
				t.Errorf("took %v, want under %v", time.Since(start), tc.maxWait)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			containsInOrder(t, "stdout", stdout, tc.stdout)
			containsInOrder(t, "stderr", stderr, tc.stderr)
			for _, s := range tc.notOut {
				if strings.Contains(stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, stdout)
				}
			}
		})
	}
}

func containsInOrder(t *testing.T, what, got string, want []string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("%s lacks %q (after the earlier lines):\n%s", what, w, got)
			return
		}
		rest = rest[i+len(w):]
	}
}

// TestHelixTestPrintsOneLinePerCase checks the shape of the output: a line per
// case and a summary, nothing else on success.
func TestHelixTestPrintsOneLinePerCase(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := execute(t, "test", "testdata/wftest/pass.yaml")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	line := regexp.MustCompile(`^(PASS \S+:\d+:\d+: .+ \(\d+(\.\d+)?[µm]?s\)|ok: 5 tests passed)$`)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 6 {
		t.Errorf("want 6 lines, got %d:\n%s", len(lines), stdout)
	}
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("unexpected line %q", l)
		}
	}
}

// TestTestingDocExamples keeps docs/testing.md honest: every YAML block loads, and
// the complete example passes `helix test`.
func TestTestingDocExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 2 {
		t.Fatalf("found %d YAML blocks", len(blocks))
	}
	for i, b := range blocks {
		if _, err := config.LoadBytes(fmt.Sprintf("testing.md block %d", i+1), b[1]); err != nil {
			t.Errorf("block %d does not load: %v", i+1, err)
		}
	}
	file := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(file, blocks[0][1], 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := execute(t, "test", file); code != ExitOK {
		t.Errorf("the first example: exit %d\n%s%s", code, stdout, stderr)
	}
}
