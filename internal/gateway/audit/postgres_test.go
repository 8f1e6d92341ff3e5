package audit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/component/postgres"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
)

// privatePostgres is a PostgreSQL server of the test's own, which it may kill
// without harming the tests that share the suite's server.
type privatePostgres struct {
	bin, dir string
	port     int
	url      string
}

func startPrivatePostgres(t *testing.T) *privatePostgres {
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
		testtools.Missing(t, "no PostgreSQL binaries (initdb, pg_ctl) to run a server this test may kill; set HELIX_PG_BIN")
		return nil
	}
	dir, err := os.MkdirTemp("", "helix-audit-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &privatePostgres{bin: bin, dir: dir, port: testtools.FreePort(t)}
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
			testtools.Missing(t, "running as root without a postgres user to run PostgreSQL as")
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
	p.url = fmt.Sprintf("postgres://helix:helix@127.0.0.1:%d/postgres", p.port)
	p.start(t)
	return p
}

func (p *privatePostgres) run(name string, args ...string) ([]byte, error) {
	if os.Getuid() == 0 {
		args = append([]string{"-u", "postgres", "--", name}, args...)
		name = "runuser"
	}
	return exec.Command(name, args...).CombinedOutput()
}

func (p *privatePostgres) pgctl(args ...string) error {
	out, err := p.run(filepath.Join(p.bin, "pg_ctl"), append([]string{"-D", filepath.Join(p.dir, "data")}, args...)...)
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %v\n%s", args, err, out)
	}
	return nil
}

// start starts the server; commits are reported only once written (a commit
// acknowledged is not lost when the server is killed).
func (p *privatePostgres) start(t *testing.T) {
	t.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=on", p.port, p.dir)
	if err := p.pgctl("-l", filepath.Join(p.dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		t.Error(err)
	}
}

// kill stops the server as a crash would (immediate: no checkpoint, clients cut).
func (p *privatePostgres) kill(t *testing.T) {
	t.Helper()
	if err := p.pgctl("-m", "immediate", "-w", "stop"); err != nil {
		t.Error(err)
	}
}

// PostgreSQL killed while two principals' calls are being recorded, then
// restarted: every record is in the table exactly once. Then a shutdown while
// it is down: the records are spooled, and the next start delivers them.
func TestPostgresKilledMidRunLosesNothing(t *testing.T) {
	t.Parallel()
	pg := startPrivatePostgres(t)
	hc := engine.NewContext("audit-test")
	hc.AddComponent("postgres", postgres.New(nil))
	m := NewMetrics()
	o := fastOptions(t.TempDir())
	o.Metrics, o.WriteTimeout, o.RetryMax = m, 2*time.Second, 50*time.Millisecond
	a, err := New(hc, "gw", &config.AuditConfig{Sink: pg.url + "?table=audit&connectTimeout=1s"}, o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	var restarted sync.WaitGroup
	var wg sync.WaitGroup
	for _, p := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if p == "alice" && i == n/2 {
					pg.kill(t)
					restarted.Add(1)
					time.AfterFunc(300*time.Millisecond, func() {
						defer restarted.Done()
						pg.start(t)
					})
				}
				a.Record(context.Background(), recordFor(p, i))
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	restarted.Wait()
	closeWithin(t, a, 30*time.Second)
	if got := counterValue(t, m.retried.WithLabelValues("gw", "postgres")); got == 0 {
		t.Error("no write was retried: the kill was not felt")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT principal, count(*), count(DISTINCT id) FROM audit GROUP BY principal ORDER BY principal")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for rows.Next() {
		var p string
		var c, d int
		if err := rows.Scan(&p, &c, &d); err != nil {
			t.Fatal(err)
		}
		got[p] = [2]int{c, d}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for _, p := range []string{"alice", "bob"} {
		if got[p] != [2]int{n, n} {
			t.Errorf("%s: %d rows of %d ids, want %d once each", p, got[p][0], got[p][1], n)
		}
	}
	conn.Close(ctx)

	// A shutdown while the database is down spools; the next start delivers.
	pg.kill(t)
	a, err = New(hc, "gw", &config.AuditConfig{Sink: pg.url + "?table=audit&connectTimeout=1s"}, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		a.Record(context.Background(), recordFor("carol", i))
	}
	closeWithin(t, a, 300*time.Millisecond)
	pg.start(t)
	a, err = New(hc, "gw", &config.AuditConfig{Sink: pg.url + "?table=audit&connectTimeout=1s"}, o)
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, a, 30*time.Second) // delivers the spool first
	conn, err = pgx.Connect(ctx, pg.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var c, d int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM audit WHERE principal = 'carol'").Scan(&c, &d); err != nil {
		t.Fatal(err)
	}
	if c != 50 || d != 50 {
		t.Errorf("carol: %d rows of %d ids after the restart, want 50 once each", c, d)
	}
}
