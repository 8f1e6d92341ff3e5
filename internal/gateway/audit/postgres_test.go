package audit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/component/postgres"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
)

// PostgreSQL killed while two principals' calls are being recorded, then
// restarted: every record is in the table exactly once. Then a shutdown while
// it is down: the records are spooled, and the next start delivers them.
func TestPostgresKilledMidRunLosesNothing(t *testing.T) {
	t.Parallel()
	pg := testtools.StartPrivatePostgres(t)
	hc := engine.NewContext("audit-test")
	hc.AddComponent("postgres", postgres.New(nil))
	m := NewMetrics()
	o := fastOptions(t.TempDir())
	o.Metrics, o.WriteTimeout, o.RetryMax = m, 2*time.Second, 50*time.Millisecond
	a, err := New(hc, "gw", &config.AuditConfig{Sink: pg.URL + "?table=audit&connectTimeout=1s"}, o)
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
					pg.Kill(t)
					restarted.Add(1)
					time.AfterFunc(300*time.Millisecond, func() {
						defer restarted.Done()
						pg.Start(t)
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
	conn, err := pgx.Connect(ctx, pg.URL)
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
	pg.Kill(t)
	a, err = New(hc, "gw", &config.AuditConfig{Sink: pg.URL + "?table=audit&connectTimeout=1s"}, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		a.Record(context.Background(), recordFor("carol", i))
	}
	closeWithin(t, a, 300*time.Millisecond)
	pg.Start(t)
	a, err = New(hc, "gw", &config.AuditConfig{Sink: pg.URL + "?table=audit&connectTimeout=1s"}, o)
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, a, 30*time.Second) // delivers the spool first
	conn, err = pgx.Connect(ctx, pg.URL)
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
