package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/component/postgres"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/exchange"
)

// queryInt runs a one-number query on url.
func queryInt(t *testing.T, url, sql string, args ...any) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func sendKeyed(t *testing.T, p interface {
	Process(context.Context, *exchange.Exchange) error
}, key string, body any) (*exchange.Exchange, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testtools.StartupBound)
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, body)
	return ex, p.Process(durable.WithKey(ctx, key), ex)
}

// A durable step's insert runs once per key: doing the step again (after a
// crash) answers the recorded row and headers without inserting again, also
// when eight executions of the step race; a new key inserts again.
func TestKeyedInsertRunsOnce(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := typesTable(t, base)
	p := target(t, with(base, "operation=insert&table="+tbl))
	key := testtools.UniqueName("run") + "/2/0"
	first, err := sendKeyed(t, p, key, map[string]any{"name": "Ada", "data": []byte{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := sendKeyed(t, p, key, map[string]any{"name": "Ada", "data": []byte{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, base, "SELECT count(*) FROM "+tbl); got != 1 {
		t.Fatalf("%d rows after the step ran twice with one key, want 1", got)
	}
	if jsonOf(t, again.In().Body()) != jsonOf(t, first.In().Body()) {
		t.Errorf("the repeat answered %s, the first run %s", jsonOf(t, again.In().Body()), jsonOf(t, first.In().Body()))
	}
	if b, _ := again.In().Body().(map[string]any)["data"].([]byte); string(b) != "\x00\x01" {
		t.Errorf("bytea came back as %#v", again.In().Body().(map[string]any)["data"])
	}
	if again.In().Header(postgres.HeaderRowCount) != int64(1) || again.In().HeaderString(postgres.HeaderCommandTag) != "INSERT 0 1" {
		t.Errorf("repeat headers %v", again.In().Headers())
	}

	raced := testtools.UniqueName("run") + "/2/0"
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			ex, err := sendKeyed(t, p, raced, map[string]any{"name": "Bo"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = fmt.Sprint(ex.In().Body().(map[string]any)["id"])
		})
	}
	wg.Wait()
	if got := queryInt(t, base, "SELECT count(*) FROM "+tbl+" WHERE name = 'Bo'"); got != 1 {
		t.Fatalf("%d rows after 8 racing executions of one step, want 1", got)
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("racing executions answered different rows: %v", ids)
		}
	}
	if _, err := sendKeyed(t, p, testtools.UniqueName("run")+"/2/0", map[string]any{"name": "Bo"}); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, base, "SELECT count(*) FROM "+tbl+" WHERE name = 'Bo'"); got != 2 {
		t.Fatalf("a new key did not insert: %d rows", got)
	}
}

// A failed statement leaves no receipt: the step done again runs it again. An
// exec keeps the body and replays its row count.
func TestKeyedFailureLeavesNoReceipt(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := typesTable(t, base)
	p := target(t, with(base, "operation=insert&table="+tbl))
	key := testtools.UniqueName("run") + "/1/0"
	if _, err := sendKeyed(t, p, key, map[string]any{"price": 1}); err == nil { // name is NOT NULL
		t.Fatal("an insert without the NOT NULL column succeeded")
	}
	if got := queryInt(t, base, "SELECT count(*) FROM helix_step_receipts WHERE key = $1", key); got != 0 {
		t.Fatalf("a failed step left %d receipts", got)
	}
	if _, err := sendKeyed(t, p, key, map[string]any{"name": "Cy"}); err != nil {
		t.Fatalf("the step done again: %v", err)
	}

	exec := target(t, with(base, "operation=exec&query="+"UPDATE "+tbl+" SET n = coalesce(n, 0) %2B 1"))
	ekey := testtools.UniqueName("run") + "/3/0"
	for range 2 {
		ex, err := sendKeyed(t, exec, ekey, "kept")
		if err != nil {
			t.Fatal(err)
		}
		if ex.In().Body() != "kept" || ex.In().Header(postgres.HeaderRowCount) != int64(1) {
			t.Fatalf("exec: body %v, headers %v", ex.In().Body(), ex.In().Headers())
		}
	}
	if got := queryInt(t, base, "SELECT n FROM "+tbl); got != 1 {
		t.Fatalf("n = %d after the keyed exec was done twice, want 1", got)
	}
}

// Outside a durable run the producer neither writes receipts nor creates their
// table.
func TestNoKeyNoReceiptsTable(t *testing.T) {
	t.Parallel()
	db := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, db, "CREATE TABLE plain (id serial PRIMARY KEY, name text)")
	p := target(t, with(db, "operation=insert&table=plain"))
	mustSend(t, p, map[string]any{"name": "x"})
	if got := queryInt(t, db, "SELECT count(*) FROM pg_tables WHERE tablename = 'helix_step_receipts'"); got != 0 {
		t.Fatal("a producer outside a durable run created the receipts table")
	}
}
