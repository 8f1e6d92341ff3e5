package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFlagPrintsTheVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := execute(t, "--version")
	if code != ExitOK {
		t.Fatalf("helix --version: exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "helix ") || !strings.Contains(stdout, runtime.Version()) {
		t.Errorf("helix --version printed %q, want the version line of helix version", stdout)
	}
	_, versionOut, _ := execute(t, "version")
	if stdout != versionOut {
		t.Errorf("helix --version printed %q, helix version %q: want the same", stdout, versionOut)
	}
}

func TestVersionCommandNamesVersionCommitDateAndGo(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := execute(t, "version")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"helix ", "commit ", "built ", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(stdout, want) {
			t.Errorf("helix version printed %q; want it to contain %q", stdout, want)
		}
	}
}

func TestBuildInfoPrefersLinkerStampsThenVCSThenModuleVersion(t *testing.T) {
	t.Parallel()
	vcs := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/arvenza/helix", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-01T10:20:30Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/arvenza/helix", Version: "v1.4.0"}}
	for _, c := range []struct {
		name                   string
		version, commit, date  string
		info                   *debug.BuildInfo
		wantV, wantC, wantDate string
	}{
		{"nothing known", "dev", "", "", nil, "dev", "unknown", "unknown"},
		{"stamped by make release", "v1.2.3", "abc1234", "2026-12-04T14:00:00Z", vcs, "v1.2.3", "abc1234", "2026-12-04T14:00:00Z"},
		{"go build in a checkout", "dev", "", "", vcs, "dev", "0123456789ab (modified)", "2026-12-01T10:20:30Z"},
		{"go install …@v1.4.0", "dev", "", "", installed, "v1.4.0", "unknown", "unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := describeBuild(c.version, c.commit, c.date, c.info)
			if got.Version != c.wantV || got.Commit != c.wantC || got.Date != c.wantDate {
				t.Errorf("got %+v, want version %q commit %q date %q", got, c.wantV, c.wantC, c.wantDate)
			}
		})
	}
}

// A binary built from a git checkout with -buildvcs=true (these machines set
// GOFLAGS=-buildvcs=false) names its commit without any -ldflags.
func TestVersionOfABinaryBuiltFromGitNamesTheCommit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the helix binary")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The go command finds a repository by its .git directory: in a `git worktree`
	// (.git is a file) it records nothing, whatever -buildvcs says.
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		t.Skip("not a git clone with a .git directory: go build records no commit here")
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git rev-parse HEAD: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "helix")
	args := []string{"build", "-buildvcs=true", "-o", bin}
	if raceEnabled { // the packages this test process was built from are in the cache
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/helix")...)
	build.Dir = root
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("helix version: %v", err)
	}
	if !strings.Contains(string(out), "commit "+string(head[:12])) {
		t.Errorf("helix version printed %q; want commit %s", out, head[:12])
	}
	if !regexp.MustCompile(`built \d{4}-\d\d-\d\dT`).Match(out) {
		t.Errorf("helix version printed %q; want the commit's date", out)
	}
}
