package cli

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEStartsWithTheTwoCommands keeps the repository's promise: README.md opens
// with a shell block whose first command runs Helix on the offline quickstart and whose
// second runs the tests, and .ci/run runs exactly that test command.
func TestREADMEStartsWithTheTwoCommands(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "```sh\n")
	if start < 0 || strings.Contains(text[:start], "```") || strings.Count(text[:start], "\n") > 3 {
		t.Fatalf("README.md does not open with a ```sh block")
	}
	block := text[start+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if len(cmds) != 2 {
		t.Fatalf("the opening block has %d commands, want 2: %q", len(cmds), cmds)
	}
	if !strings.Contains(cmds[0], "./cmd/helix run examples/quickstart.yaml") {
		t.Errorf("first command %q does not run examples/quickstart.yaml from the clone", cmds[0])
	}
	if cmds[1] != "make test" {
		t.Errorf("second command %q, want make test", cmds[1])
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var ciCmds []string
	for _, line := range strings.Split(string(ci), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "set ") && !strings.HasPrefix(line, "cd ") {
			ciCmds = append(ciCmds, line)
		}
	}
	if len(ciCmds) != 1 || (ciCmds[0] != "make test" && ciCmds[0] != "exec make test") {
		t.Errorf(".ci/run runs %q, want exactly make test", ciCmds)
	}
}
