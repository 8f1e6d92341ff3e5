package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo writes a `go` that, instead of compiling, writes its environment and
// arguments into the -o file: the release script's choices without a build.
func fakeGo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "go")
	script := `#!/usr/bin/env bash
out=""
prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
[ -n "$out" ] || { echo "fake go: no -o" >&2; exit 1; }
printf 'GOOS=%s GOARCH=%s CGO_ENABLED=%s args:' "$GOOS" "$GOARCH" "$CGO_ENABLED" > "$out"
printf ' %s' "$@" >> "$out"
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReleaseBuildsEveryPlatformStampedWithChecksums(t *testing.T) {
	dist := filepath.Join(t.TempDir(), "dist")
	cmd := exec.Command("bash", "scripts/release.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GO="+fakeGo(t), "DIST="+dist,
		"VERSION=v9.9.9", "COMMIT=abc1234", "DATE=2026-12-04T14:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, platform := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		name := "helix_v9.9.9_" + platform
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Errorf("%s not built: %v", name, err)
			continue
		}
		goos, goarch, _ := strings.Cut(platform, "_")
		for _, w := range []string{"GOOS=" + goos + " ", "GOARCH=" + goarch + " ", "CGO_ENABLED=0 ", " -trimpath ",
			"-X github.com/arvenza/helix/internal/cli.Version=v9.9.9", "-X github.com/arvenza/helix/internal/cli.Commit=abc1234",
			"-X github.com/arvenza/helix/internal/cli.Date=2026-12-04T14:00:00Z", " ./cmd/helix"} {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s was built without %q: %s", name, w, b)
			}
		}
		sum := sha256.Sum256(b)
		want[name] = hex.EncodeToString(sum[:])
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != len(want) {
		t.Errorf("SHA256SUMS has %d lines, want %d:\n%s", len(lines), len(want), sums)
	}
	for _, line := range lines {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || want[name] != sum {
			t.Errorf("SHA256SUMS line %q: want %q (sha256sum -c format)", line, want[name]+"  "+name)
		}
	}
}

func TestReleaseRefusesAnUnknownPlatform(t *testing.T) {
	cmd := exec.Command("bash", "scripts/release.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GO="+fakeGo(t), "DIST="+filepath.Join(t.TempDir(), "dist"),
		"VERSION=v1", "COMMIT=c", "DATE=d", "PLATFORMS=linux/amd64 plan9")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `"plan9"`) || !strings.Contains(string(out), "OS/ARCH") {
		t.Errorf("release.sh with PLATFORMS=plan9: err %v, output %q; want a failure naming it and the OS/ARCH form", err, out)
	}
}

func TestDistIsIgnoredByGit(t *testing.T) {
	b, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(b), "\n/dist/\n") {
		t.Error(".gitignore does not ignore /dist/, where make release writes")
	}
}
