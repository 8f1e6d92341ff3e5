package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version, Commit and Date are stamped at build time by `make release`:
//
//	go build -ldflags "-X github.com/arvenza/helix/internal/cli.Version=1.2.3 \
//	  -X github.com/arvenza/helix/internal/cli.Commit=abc1234 \
//	  -X github.com/arvenza/helix/internal/cli.Date=2026-12-04T14:00:00Z" ./cmd/helix
//
// Unstamped, helix version falls back to what the Go toolchain recorded in the
// binary (debug.ReadBuildInfo): the module version of `go install …@v1.2.3`, and the
// commit and its time of a build from a git checkout.
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// buildDescription is what helix version prints.
type buildDescription struct {
	Version, Commit, Date string
}

// describeBuild combines the linker stamps with the toolchain's build info (nil
// when the binary has none); a stamp always wins.
func describeBuild(version, commit, date string, info *debug.BuildInfo) buildDescription {
	d := buildDescription{Version: version, Commit: commit, Date: date}
	if info != nil {
		if (d.Version == "" || d.Version == "dev") && info.Main.Version != "" && info.Main.Version != "(devel)" {
			d.Version = info.Main.Version
		}
		vcs := map[string]string{}
		for _, s := range info.Settings {
			vcs[s.Key] = s.Value
		}
		if d.Commit == "" && vcs["vcs.revision"] != "" {
			d.Commit = shortRevision(vcs["vcs.revision"])
			if vcs["vcs.modified"] == "true" {
				d.Commit += " (modified)"
			}
		}
		if d.Date == "" {
			d.Date = vcs["vcs.time"]
		}
	}
	if d.Version == "" {
		d.Version = "dev"
	}
	if d.Commit == "" {
		d.Commit = "unknown"
	}
	if d.Date == "" {
		d.Date = "unknown"
	}
	return d
}

// shortRevision is the first 12 hex digits of a commit, enough to name it.
func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// currentBuild describes the running binary.
func currentBuild() buildDescription {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return describeBuild(Version, Commit, Date, info)
}

// versionLine is the one line of helix version and helix --version.
func versionLine() string {
	d := currentBuild()
	return fmt.Sprintf("helix %s (commit %s, built %s, %s, %s/%s)\n",
		d.Version, d.Commit, d.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the helix version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}
