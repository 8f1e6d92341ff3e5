package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/testtools"
)

// Every statement built from the fuzz fragments that the guard accepts runs
// against a real PostgreSQL whose unlisted columns hold a secret (each in a
// transaction that is rolled back): the secret never comes back.
func TestGuardAcceptedStatementsNeverReturnTheSecret(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	schema := testtools.UniqueName("guardleak")
	const secret = "S3CRET-VALUE"
	testtools.PostgresExec(t, base,
		"CREATE SCHEMA "+schema,
		"CREATE TABLE "+schema+`.customers (id int PRIMARY KEY, name text, email text, password text, "ID" text)`,
		"CREATE TABLE "+schema+".orders (id int, customer_id int, secret text)",
		"CREATE TABLE "+schema+".secrets (id int, password text)",
		"INSERT INTO "+schema+".customers VALUES (1, 'Ada', 'ada@x', '"+secret+"', '"+secret+"')",
		"INSERT INTO "+schema+".orders VALUES (1, 1, '"+secret+"')",
		"INSERT INTO "+schema+".secrets VALUES (1, '"+secret+"')")
	t.Cleanup(func() { testtools.PostgresExec(t, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	// Thousands of statements, slow on a loaded machine: so the bound is
	// the test's own deadline (go test -timeout), not a fixed one.
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SET search_path TO "+schema); err != nil {
		t.Fatal(err)
	}
	g := &columnGuard{allowed: guardAllowed, source: "of the test"}
	accepted, ran := 0, 0
	for _, shape := range fuzzShapes {
		for _, item := range fuzzItems {
			for _, source := range fuzzSources {
				for _, cond := range fuzzConditions {
					sql := fmt.Sprintf(shape, item, source, cond, "name")
					if g.check(sql) != nil {
						continue
					}
					accepted++
					if runAndFindSecret(ctx, t, conn, sql, secret) {
						ran++
					}
				}
			}
		}
	}
	t.Logf("%d statements accepted, %d of them ran without an error; none returned the secret", accepted, ran)
	if ran == 0 {
		t.Error("no accepted statement ran: the test proves nothing")
	}
}

// runAndFindSecret runs sql with "1" for each parameter in a transaction it rolls
// back; it fails the test if a row holds secret, and tells whether sql ran.
func runAndFindSecret(ctx context.Context, t *testing.T, conn *pgx.Conn, sql, secret string) bool {
	t.Helper()
	var args []any
	for n := 1; strings.Contains(sql, fmt.Sprintf("$%d", n)); n++ {
		args = append(args, "1")
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return false
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return false
		}
		if out, _ := json.Marshal(vals); strings.Contains(string(out), secret) {
			t.Errorf("the guard accepted %q and it returned the secret: %s", sql, out)
		}
	}
	return rows.Err() == nil
}
