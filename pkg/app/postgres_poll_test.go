package app_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
)

// pollYAML is a polling workflow: each job row is copied to a log table by a second
// postgres:// target (its own connection, committed at once), and the trigger marks the
// row done in the batch's transaction.
func pollYAML(db string) string {
	return fmt.Sprintf(`workflows:
  - id: work
    trigger: "%[1]s?delay=20ms&maxRows=20&query=SELECT id FROM jobs WHERE NOT done ORDER BY id FOR UPDATE SKIP LOCKED&onConsume=UPDATE jobs SET done = true WHERE id = :id"
    steps:
      - target: "%[1]s?operation=insert&returning=false&table=handled"
`, db)
}

func pgCount(t *testing.T, db, sql string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A helix process is killed (SIGKILL) in the middle of a polling stream and started
// again: every row is handled at least once and none is lost; the rows handled twice
// are those of the batch that never committed (at most maxRows=20).
func TestPostgresPollingSurvivesKill(t *testing.T) {
	t.Parallel()
	const rows = 400
	db := specDatabase(t,
		"CREATE TABLE jobs (id int PRIMARY KEY, done boolean NOT NULL DEFAULT false)",
		"CREATE TABLE handled (seq bigserial PRIMARY KEY, id int NOT NULL)",
		fmt.Sprintf("INSERT INTO jobs (id) SELECT g FROM generate_series(1, %d) g", rows))
	file := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(file, []byte(pollYAML(db)), 0o600); err != nil {
		t.Fatal(err)
	}
	helix := testtools.HelixBinary(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(helix, "run", file)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		var stderr testtools.SyncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("helix stderr:\n%s", stderr.String())
			}
		})
		return cmd
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		testtools.Eventually(t, what, cond)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("handled %d, done %d", pgCount(t, db, "SELECT count(*) FROM handled"), pgCount(t, db, "SELECT count(*) FROM jobs WHERE done"))
		}
	})
	first := start()
	waitFor("the first helix to handle 150 rows", func() bool { return pgCount(t, db, "SELECT count(*) FROM handled") >= 150 })
	if err := first.Process.Kill(); err != nil { // SIGKILL: no drain, no commit
		t.Fatal(err)
	}
	_ = first.Wait()
	// The server ends the dead process's sessions (rolling its batch back) when it
	// notices; a statement it had already received still commits. Count after that.
	waitFor("the killed helix's sessions to end", func() bool {
		return pgCount(t, db, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'helix' AND datname = current_database()") == 0
	})
	atKill := pgCount(t, db, "SELECT count(*) FROM handled")
	doneAtKill := pgCount(t, db, "SELECT count(*) FROM jobs WHERE done")
	start()
	waitFor("the restarted helix to mark every row", func() bool { return pgCount(t, db, "SELECT count(*) FROM jobs WHERE NOT done") == 0 })

	if lost := pgCount(t, db, "SELECT count(*) FROM jobs j WHERE NOT EXISTS (SELECT 1 FROM handled h WHERE h.id = j.id)"); lost != 0 {
		t.Errorf("%d rows were never handled", lost)
	}
	dups := pgCount(t, db, "SELECT count(*) - count(DISTINCT id) FROM handled")
	t.Logf("killed after %d rows handled (%d marked done): %d rows handled twice", atKill, doneAtKill, dups)
	if dups > 20 {
		t.Errorf("%d rows handled twice; at most one batch (maxRows=20) may come again", dups)
	}
	if dups != atKill-doneAtKill {
		t.Errorf("%d duplicates, want %d: the rows handled but not marked when helix died", dups, atKill-doneAtKill)
	}
}

// Mistakes in a postgres:// URI are reported by validation at the URI's position.
func TestPostgresURIMistakesAtTheirPosition(t *testing.T) {
	t.Parallel()
	src := `workflows:
  - id: b
    trigger: postgres://db/shop?delay=1s
  - id: a
    trigger: direct://a
    steps:
      - target: postgres://db:5432/shop?operation=insert
      - target: postgres://app:s3cret-pw@db/shop?operation=delete&table=t
      - target: postgres://db/shop?opration=query
      - target: postgres://db:5432
`
	if _, err := config.LoadBytes("helix.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	_, err := buildYAML(t, src)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		"helix.yaml:3:14: workflows[0].trigger: postgres://db/shop?delay=1s: a postgres trigger needs query=",
		"helix.yaml:7:17: workflows[1].steps[0]",
		"operation=insert needs table=",
		"helix.yaml:8:17: workflows[1].steps[1]",
		"operation=delete needs where=",
		"postgres://app:***@db/shop",
		"helix.yaml:9:17",
		`unknown option "opration" (did you mean "operation"?)`,
		"helix.yaml:10:17",
		"needs a database name",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "s3cret-pw") {
		t.Errorf("the password is shown:\n%s", msg)
	}
}

// Credentials from ${env:…} in the URI's options: the right password works, a wrong one
// fails with SQLSTATE 28P01 and neither password appears in the error.
func TestPostgresPasswordFromEnv(t *testing.T) {
	base := testtools.PostgresURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	t.Setenv("HELIX_TEST_PGPASSWORD", pw)
	t.Setenv("HELIX_TEST_WRONG_PGPASSWORD", "Not-The-Pw-42")
	a := startYAML(t, `workflows:
  - id: ok
    trigger: direct://ok
    steps:
      - target: "`+u.String()+`?query=SELECT 1 AS one&password=${env:HELIX_TEST_PGPASSWORD}"
  - id: wrong
    trigger: direct://wrong
    steps:
      - target: "`+u.String()+`?query=SELECT 1 AS one&password=${env:HELIX_TEST_WRONG_PGPASSWORD}"
`)
	got, err := request(a, "direct://ok", nil)
	if err != nil || string(asBytes(got)) != `[{"one":1}]` {
		t.Errorf("password from env: %v %s", err, asBytes(got))
	}
	_, err = request(a, "direct://wrong", nil)
	if err == nil || !strings.Contains(err.Error(), "28P01") {
		t.Fatalf("wrong password: %v", err)
	}
	if strings.Contains(err.Error(), "Not-The-Pw-42") || strings.Contains(err.Error(), "password="+pw) {
		t.Errorf("the error shows a password: %v", err)
	}
}
