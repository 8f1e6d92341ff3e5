package testtools

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// PrivatePostgres is a PostgreSQL server of one test's own, which it may kill
// and start again (a crash, an outage) without harming the tests that share the
// suite's server.
type PrivatePostgres struct {
	// URL reaches the server's postgres database as helix/helix (no query:
	// callers add their own).
	URL      string
	bin, dir string
	port     int
}

// StartPrivatePostgres runs initdb and starts a server, stopped at the test's
// end (skipped, or failed under HELIX_REQUIRE_TOOLS=1, when no PostgreSQL
// binaries are found; HELIX_PG_BIN names their folder).
func StartPrivatePostgres(t *testing.T) *PrivatePostgres {
	t.Helper()
	bin := os.Getenv("HELIX_PG_BIN")
	if bin == "" {
		for _, v := range []string{"17", "16", "15"} {
			if _, err := os.Stat("/usr/lib/postgresql/" + v + "/bin/initdb"); err == nil {
				bin = "/usr/lib/postgresql/" + v + "/bin"
				break
			}
		}
	}
	if bin == "" {
		Missing(t, "no PostgreSQL binaries (initdb, pg_ctl) to run a server this test may stop; set HELIX_PG_BIN")
		return nil
	}
	dir, err := os.MkdirTemp("", "helix-private-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &PrivatePostgres{bin: bin, dir: dir, port: FreePort(t)}
	t.Cleanup(func() {
		_ = p.pgctl("-m", "immediate", "-w", "stop")
		_ = os.RemoveAll(dir)
	})
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("helix\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		// initdb refuses to run as root: the server runs as postgres.
		u, err := user.Lookup("postgres")
		if err != nil {
			Missing(t, "running as root without a postgres user to run PostgreSQL as")
			return nil
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, f := range []string{dir, filepath.Join(dir, "pw")} {
			if err := os.Chown(f, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	if out, err := p.run(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "helix", "--pwfile="+filepath.Join(dir, "pw"),
		"-A", "scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.URL = fmt.Sprintf("postgres://helix:helix@127.0.0.1:%d/postgres", p.port)
	p.Start(t)
	return p
}

func (p *PrivatePostgres) run(name string, args ...string) ([]byte, error) {
	if os.Getuid() == 0 {
		args = append([]string{"-u", "postgres", "--", name}, args...)
		name = "runuser"
	}
	return exec.Command(name, args...).CombinedOutput()
}

func (p *PrivatePostgres) pgctl(args ...string) error {
	out, err := p.run(filepath.Join(p.bin, "pg_ctl"), append([]string{"-D", filepath.Join(p.dir, "data")}, args...)...)
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %v\n%s", args, err, out)
	}
	return nil
}

// Start starts the server. A commit is acknowledged only once written, so a
// server killed as by a crash keeps every commit it acknowledged.
func (p *PrivatePostgres) Start(t *testing.T) {
	t.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=on", p.port, p.dir)
	if err := p.pgctl("-l", filepath.Join(p.dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		t.Error(err)
	}
}

// Kill stops the server as a crash would (immediate: no checkpoint, clients cut
// at once).
func (p *PrivatePostgres) Kill(t *testing.T) {
	t.Helper()
	if err := p.pgctl("-m", "immediate", "-w", "stop"); err != nil {
		t.Error(err)
	}
}
