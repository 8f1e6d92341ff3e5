package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make build and make build-slim: stripped (-s -w), reproducible paths
// (-trimpath) and stamped for `helix version` like release binaries; build-slim
// with every slim tag. The fake go records its arguments instead of compiling.
func TestMakeBuildIsStrippedAndStamped(t *testing.T) {
	t.Parallel()
	stamp := []string{"-X github.com/arvenza/helix/internal/cli.Version=v9.9.9",
		"-X github.com/arvenza/helix/internal/cli.Commit=abc1234", "-X github.com/arvenza/helix/internal/cli.Date=2026-12-04T14:00:00Z"}
	for _, c := range []struct {
		target, out string
		want        []string
	}{
		{"build", "helix", append([]string{" -trimpath ", "-s -w ", " ./cmd/helix"}, stamp...)},
		{"build-slim", "helix-slim", append([]string{" -trimpath ", "-s -w ", " ./cmd/helix",
			" -tags helix_nollm,helix_noredis,helix_noonnx,helix_nokafka "}, stamp...)},
	} {
		dir := t.TempDir()
		cmd := exec.Command("make", "-s", "--no-print-directory", c.target, "GO="+fakeGo(t), "BIN_DIR="+dir,
			"VERSION=v9.9.9", "COMMIT=abc1234", "DATE=2026-12-04T14:00:00Z")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", c.target, err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, c.out))
		if err != nil {
			t.Fatalf("make %s wrote no %s: %v", c.target, c.out, err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("make %s: go was run without %q: %s", c.target, w, b)
			}
		}
	}
}

// scripts/binary-size.sh refuses a build it does not know before compiling
// anything, saying what it accepts.
func TestBinarySizeScriptRefusesUnknownBuild(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("bash", "scripts/binary-size.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "BUILDS=helix_nollm tiny", "GO="+fakeGo(t))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown build "tiny": use default, all or one tag`) {
		t.Errorf("binary-size.sh with an unknown build: %v\n%s", err, out)
	}
}
