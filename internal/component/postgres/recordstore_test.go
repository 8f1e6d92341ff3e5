package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/component/postgres"
	"github.com/arvenza/helix/internal/recordstore"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/uri"
)

// A record store creates its table, stores each batch, and stores a record
// written again (a batch retried after a lost commit) once.
func TestRecordStoreKeepsEachRecordOnce(t *testing.T) {
	dbURL := testtools.PostgresURL(t)
	table := testtools.UniqueName("audit")
	t.Cleanup(func() { testtools.PostgresExec(t, dbURL, "DROP TABLE IF EXISTS "+table) })
	u, err := uri.Parse(dbURL + "?table=" + table)
	if err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(nil).OpenRecordStore(u, recordstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	batch := func(from, to int) []recordstore.Record {
		var out []recordstore.Record
		for i := from; i < to; i++ {
			id := fmt.Sprint("r", i)
			out = append(out, recordstore.Record{ID: id, JSON: []byte(fmt.Sprintf(
				`{"id":%q,"time":"2026-12-05T04:00:00Z","server":"gw","principal":"alice","method":"tools/call","name":"t","outcome":"ok","latency_ms":1.5}`, id))})
		}
		return out
	}
	ctx := context.Background()
	for _, b := range [][]recordstore.Record{batch(0, 5), batch(3, 8), batch(0, 8)} {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, distinct int
	var principal, latency string
	var when time.Time
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT id), min(principal), min(record->>'latency_ms'), min(time) FROM "+table).Scan(&n, &distinct, &principal, &latency, &when); err != nil {
		t.Fatal(err)
	}
	if n != 8 || distinct != 8 || principal != "alice" || latency != "1.5" || !when.Equal(time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)) {
		t.Errorf("table has %d rows (%d ids), principal %q, latency %q, time %v; want 8 once each", n, distinct, principal, latency, when)
	}
}

func TestRecordStoreRefusesStatementOptions(t *testing.T) {
	for _, opt := range []string{"operation=query", "query=SELECT%201", "channel=x"} {
		u, err := uri.Parse("postgres://u:secretpw@localhost/db?" + opt)
		if err != nil {
			t.Fatal(err)
		}
		_, err = postgres.New(nil).OpenRecordStore(u, recordstore.Options{})
		if err == nil {
			t.Errorf("%s accepted", opt)
			continue
		}
		if strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%s: the error shows the password: %v", opt, err)
		}
	}
}
