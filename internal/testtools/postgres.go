package testtools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvPostgresURL names the variable holding the URL of the PostgreSQL server the tests
// use (postgres://user:password@127.0.0.1:port/db). scripts/postgres.sh start prints
// it; `make test` exports it.
const EnvPostgresURL = "HELIX_POSTGRES_URL"

// PostgresURL returns $HELIX_POSTGRES_URL after checking that the server answers. When
// it is unset or the server does not answer the test is skipped with a hint — or fails,
// under HELIX_REQUIRE_TOOLS=1.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvPostgresURL)
	if u == "" {
		missingPostgres(t, EnvPostgresURL+" is not set")
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		missingPostgres(t, "PostgreSQL at "+EnvPostgresURL+" does not answer: "+err.Error())
		return ""
	}
	_ = conn.Close(ctx)
	return u
}

func missingPostgres(t testing.TB, msg string) {
	t.Helper()
	missingService(t, msg, `start one with: eval "$(scripts/postgres.sh start)"`)
}

// PostgresExec runs statements on the test server with a connection of its own,
// failing the test on error.
func PostgresExec(t testing.TB, url string, sql ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	for _, s := range sql {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// UniqueName returns prefix followed by random hex, for tables and channels that
// concurrent test packages sharing one server must not share.
func UniqueName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return strings.ToLower(prefix) + "_" + hex.EncodeToString(b)
}

// PostgresDatabase creates a database of its own on the test server and returns its URL
// (the server's URL with the database replaced); it is dropped, with any session still
// on it, when the test ends. Tests that share fixed table names, or that terminate
// sessions, use one so that concurrent test packages never meet.
func PostgresDatabase(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvPostgresURL, err)
	}
	name := UniqueName("helixtest")
	PostgresExec(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { PostgresExec(t, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}
