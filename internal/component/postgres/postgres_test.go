package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	"github.com/arvenza/helix/internal/component/postgres"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// target builds and starts a producer for raw; it stops at the end of the test.
func target(t *testing.T, raw string) component.Producer {
	t.Helper()
	c := postgres.New(nil)
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.CreateEndpoint(u)
	if err != nil {
		t.Fatalf("CreateEndpoint(%s): %v", raw, err)
	}
	p, err := ep.CreateProducer()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// send runs body through p and returns the exchange.
func send(t *testing.T, p component.Producer, body any) (*exchange.Exchange, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testtools.StartupBound) // a bound for a hang: the column guard's WebAssembly parser is slow under -race on a loaded machine
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, body)
	err := p.Process(ctx, ex)
	return ex, err
}

func mustSend(t *testing.T, p component.Producer, body any) *exchange.Exchange {
	t.Helper()
	ex, err := send(t, p, body)
	if err != nil {
		t.Fatalf("Process(%v): %v", body, err)
	}
	return ex
}

// with appends options to the server URL.
func with(base, opts string) string {
	if strings.Contains(base, "?") {
		return base + "&" + opts
	}
	return base + "?" + opts
}

// jsonOf renders v as JSON for comparisons.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listener LISTENs on channel with its own connection and reports each payload.
func listener(t *testing.T, base, channel string) <-chan componenttest.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	out := make(chan componenttest.Message, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			out <- componenttest.Message{Body: n.Payload}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = conn.Close(context.Background())
	})
	return out
}

// The shared suite: the producer NOTIFYs through a query= statement with the body as
// $1, the consumer LISTENs on the same channel.
func TestConformance(t *testing.T) {
	// Not parallel: it checks process-wide state (goroutines or child processes).
	base := testtools.PostgresURL(t)
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{
			Producer: true, Consumer: true, Pattern: exchange.InOnly, StopDrains: true, Stress: true,
		},
		Setup: func(t *testing.T) *componenttest.Fixture {
			ch := testtools.UniqueName("conf")
			raw := with(base, "operation=exec&channel="+ch+"&query="+url.QueryEscape("SELECT pg_notify('"+ch+"', $1)")+"&delay=100ms")
			return &componenttest.Fixture{
				Component: postgres.New(nil),
				URI:       raw,
				Listen:    func() <-chan componenttest.Message { return listener(t, base, ch) },
				Send: func(ctx context.Context, m componenttest.Message) (componenttest.Message, error) {
					conn, err := pgx.Connect(ctx, base)
					if err != nil {
						return componenttest.Message{}, err
					}
					defer conn.Close(context.Background())
					_, err = conn.Exec(ctx, "SELECT pg_notify($1, $2)", ch, m.Body)
					return componenttest.Message{}, err
				},
			}
		},
	})
}

// typesTable creates a table holding one column per mapped type and returns its name.
func typesTable(t *testing.T, base string) string {
	t.Helper()
	tbl := testtools.UniqueName("ops")
	testtools.PostgresExec(t, base, `CREATE TABLE `+tbl+` (
		id serial PRIMARY KEY,
		name text NOT NULL,
		price numeric(10,2),
		big numeric,
		created timestamptz DEFAULT '2026-03-03T10:00:00Z',
		day date,
		uid uuid,
		doc jsonb,
		data bytea,
		tags text[],
		flag boolean,
		ratio double precision,
		n smallint,
		status text DEFAULT 'new')`)
	t.Cleanup(func() { testtools.PostgresExec(t, base, "DROP TABLE IF EXISTS "+tbl) })
	return tbl
}

func TestInsertOneRowAnswersTheRow(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := typesTable(t, base)
	p := target(t, with(base, "operation=insert&table="+tbl))
	ex := mustSend(t, p, map[string]any{
		"name": "Ada", "price": 59.97, "big": "12345678901234567890.123456789",
		"day": "2026-03-07", "uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
		"doc":  map[string]any{"items": []any{map[string]any{"sku": "A1", "qty": int64(2)}}},
		"data": []byte{0, 1, 2}, "tags": []any{"x", "y"}, "flag": true, "ratio": 0.25, "n": int64(7),
	})
	row, ok := ex.In().Body().(map[string]any)
	if !ok {
		t.Fatalf("body %T %v, want the inserted row as a map", ex.In().Body(), ex.In().Body())
	}
	want := map[string]any{
		"id": int64(1), "name": "Ada", "price": 59.97, "big": "12345678901234567890.123456789",
		"created": "2026-03-03T10:00:00Z", "day": "2026-03-07", "uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
		"doc":  map[string]any{"items": []any{map[string]any{"sku": "A1", "qty": float64(2)}}},
		"data": []byte{0, 1, 2}, "tags": []any{"x", "y"}, "flag": true, "ratio": 0.25, "n": int64(7), "status": "new",
	}
	for k, w := range want {
		if fmt.Sprintf("%#v", row[k]) != fmt.Sprintf("%#v", w) {
			t.Errorf("column %s = %#v, want %#v", k, row[k], w)
		}
	}
	if n := ex.In().Header(postgres.HeaderRowCount); n != int64(1) {
		t.Errorf("%s = %v, want 1", postgres.HeaderRowCount, n)
	}
	if tag := ex.In().HeaderString(postgres.HeaderCommandTag); tag != "INSERT 0 1" {
		t.Errorf("%s = %q", postgres.HeaderCommandTag, tag)
	}
}

func TestInsertManyRows(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := typesTable(t, base)
	p := target(t, with(base, "operation=insert&table="+tbl))
	// Keys differ between maps: a missing key is the column's DEFAULT.
	ex := mustSend(t, p, []any{
		map[string]any{"name": "a", "status": "old"},
		map[string]any{"name": "b"},
	})
	rows, ok := ex.In().Body().([]any)
	if !ok || len(rows) != 2 {
		t.Fatalf("body %v, want two rows", ex.In().Body())
	}
	if s := rows[1].(map[string]any)["status"]; s != "new" {
		t.Errorf("row b status %v, want the default new", s)
	}
	// 2500 rows: three statements in one transaction.
	var many []any
	for i := range 2500 {
		many = append(many, map[string]any{"name": fmt.Sprint("r", i), "n": int64(i % 100)})
	}
	ex = mustSend(t, p, many)
	if n := ex.In().Header(postgres.HeaderRowCount); n != int64(2500) {
		t.Errorf("row count %v, want 2500", n)
	}
	if got := len(ex.In().Body().([]any)); got != 2500 {
		t.Errorf("%d rows returned, want 2500", got)
	}
	// COPY keeps the body and counts the rows.
	cp := target(t, with(base, "operation=insert&insertMode=copy&table="+tbl))
	ex = mustSend(t, cp, []any{map[string]any{"name": "c1", "n": int64(1)}, map[string]any{"name": "c2", "n": int64(2)}})
	if n := ex.In().Header(postgres.HeaderRowCount); n != int64(2) {
		t.Errorf("copy row count %v, want 2", n)
	}
	if _, err := send(t, cp, []any{map[string]any{"name": "x"}, map[string]any{"name": "y", "n": int64(1)}}); err == nil || !strings.Contains(err.Error(), "same keys") {
		t.Errorf("copy with different keys: %v", err)
	}
	q := target(t, with(base, "query="+url.QueryEscape("SELECT count(*) AS n FROM "+tbl)))
	if got := jsonOf(t, mustSend(t, q, nil).In().Body()); got != `[{"n":2504}]` {
		t.Errorf("count %s, want 2504", got)
	}
}

func TestQueryUpdateDeleteExec(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := typesTable(t, base)
	ins := target(t, with(base, "operation=insert&returning=false&table="+tbl))
	ex := mustSend(t, ins, []any{map[string]any{"name": "a", "n": int64(1)}, map[string]any{"name": "b", "n": int64(2)}, map[string]any{"name": "c", "n": int64(3)}})
	if _, isList := ex.In().Body().([]any); !isList || ex.In().Header(postgres.HeaderRowCount) != int64(3) {
		t.Fatalf("returning=false: body %v, count %v", ex.In().Body(), ex.In().Header(postgres.HeaderRowCount))
	}

	// query= with :name from a map body.
	named := target(t, with(base, "query="+url.QueryEscape("SELECT name FROM "+tbl+" WHERE n >= :min AND name <> :skip ORDER BY n")))
	if got := jsonOf(t, mustSend(t, named, map[string]any{"min": int64(2), "skip": "x"}).In().Body()); got != `[{"name":"b"},{"name":"c"}]` {
		t.Errorf("named query: %s", got)
	}
	if _, err := send(t, named, map[string]any{"min": 1}); err == nil || !strings.Contains(err.Error(), ":skip") {
		t.Errorf("missing named parameter: %v", err)
	}
	// query= with $n from a list body, and a scalar body as $1.
	pos := target(t, with(base, "query="+url.QueryEscape("SELECT name FROM "+tbl+" WHERE n = $1 ::int OR name = $2")))
	if got := jsonOf(t, mustSend(t, pos, []any{int64(1), "c"}).In().Body()); got != `[{"name":"a"},{"name":"c"}]` {
		t.Errorf("positional query: %s", got)
	}
	one := target(t, with(base, "query="+url.QueryEscape("SELECT name FROM "+tbl+" WHERE name = $1")))
	if got := jsonOf(t, mustSend(t, one, "b").In().Body()); got != `[{"name":"b"}]` {
		t.Errorf("scalar body: %s", got)
	}
	// SQL and params from the body (spec §12.1's shape); the header counts the rows.
	q := target(t, with(base, "operation=query"))
	ex = mustSend(t, q, map[string]any{"query": "SELECT name FROM " + tbl + " WHERE name ILIKE $1 LIMIT $2", "params": []any{"%", int64(2)}})
	if got := jsonOf(t, ex.In().Body()); got != `[{"name":"a"},{"name":"b"}]` || ex.In().Header(postgres.HeaderRowCount) != int64(2) {
		t.Errorf("body query: %s, count %v", got, ex.In().Header(postgres.HeaderRowCount))
	}
	// A JSON text body (from an HTTP request) reads the same.
	if got := jsonOf(t, mustSend(t, q, []byte(`{"query":"SELECT 1 AS one"}`)).In().Body()); got != `[{"one":1}]` {
		t.Errorf("JSON text body: %s", got)
	}

	up := target(t, with(base, "operation=update&table="+tbl+"&where="+url.QueryEscape("name = :name")))
	ex = mustSend(t, up, map[string]any{"name": "b", "status": "shipped"})
	if got := ex.In().Body().([]any); len(got) != 1 || got[0].(map[string]any)["status"] != "shipped" || got[0].(map[string]any)["name"] != "b" {
		t.Errorf("update answered %v", got)
	}
	if ex.In().HeaderString(postgres.HeaderCommandTag) != "UPDATE 1" {
		t.Errorf("update tag %q", ex.In().HeaderString(postgres.HeaderCommandTag))
	}
	del := target(t, with(base, "operation=delete&table="+tbl+"&where="+url.QueryEscape("n < :n")))
	ex = mustSend(t, del, map[string]any{"n": int64(3)})
	if ex.In().Header(postgres.HeaderRowCount) != int64(2) || len(ex.In().Body().([]any)) != 2 {
		t.Errorf("delete: count %v body %v", ex.In().Header(postgres.HeaderRowCount), ex.In().Body())
	}
	exec := target(t, with(base, "operation=exec&query="+url.QueryEscape("UPDATE "+tbl+" SET status = :s")))
	ex = mustSend(t, exec, map[string]any{"s": "done"})
	if ex.In().Header(postgres.HeaderRowCount) != int64(1) {
		t.Errorf("exec count %v", ex.In().Header(postgres.HeaderRowCount))
	}
	if b, ok := ex.In().Body().(map[string]any); !ok || b["s"] != "done" {
		t.Errorf("exec changed the body: %v", ex.In().Body())
	}
}

// Each PostgreSQL type a query answers, as the body's JSON-natural value.
func TestTypeMapping(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	q := target(t, with(base, "operation=query"))
	for _, tc := range []struct {
		expr string
		want any
	}{
		{"1::int2", int64(1)},
		{"2::int4", int64(2)},
		{"9007199254740993::int8", int64(9007199254740993)},
		{"1.5::float4", float64(1.5)},
		{"0.1::float8", 0.1},
		{"59.90::numeric(10,2)", 59.9},
		{"12345678901234567890::numeric", "12345678901234567890"},
		{"1e3::numeric", int64(1000)},
		{"0.1234567890123456789::numeric", "0.1234567890123456789"},
		{"'NaN'::numeric", "NaN"},
		{"'2026-03-03 12:30:00.5+02'::timestamptz", "2026-03-03T10:30:00.5Z"},
		{"'2026-03-03 12:30:00'::timestamp", "2026-03-03T12:30:00"},
		{"'2026-03-03'::date", "2026-03-03"},
		{"'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{`'{"a": [1, "x", null, true]}'::jsonb`, map[string]any{"a": []any{float64(1), "x", nil, true}}},
		{`'[1,2]'::json`, []any{float64(1), float64(2)}},
		{`'\x000102'::bytea`, []byte{0, 1, 2}},
		{"NULL::text", nil},
		{"true", true},
		{"'hé'::text", "hé"},
		{"ARRAY[1,2]::int4[]", []any{int64(1), int64(2)}},
		{"'127.0.0.1'::inet", "127.0.0.1"},
		{"'1 day 02:03:04'::interval", "1 day 02:03:04"},
	} {
		ex, err := send(t, q, map[string]any{"query": "SELECT " + tc.expr + " AS v"})
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		got := ex.In().Body().([]any)[0].(map[string]any)["v"]
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.expr, got, tc.want)
		}
	}
}

// Names from the URI and from map keys are quoted identifiers; values are bound.
func TestInjectionThroughNamesAndValues(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := typesTable(t, base)
	// A table option that tries to end the statement names a table that does not exist.
	evil := target(t, with(base, "operation=insert&table="+url.QueryEscape(tbl+`" (name) VALUES ('x'); DROP TABLE `+tbl+`; --`)))
	_, err := send(t, evil, map[string]any{"name": "x"})
	if err == nil || !strings.Contains(err.Error(), "42P01") {
		t.Errorf("evil table: %v, want SQLSTATE 42P01 (no such table)", err)
	}
	// A map key that tries the same is a column that does not exist.
	ins := target(t, with(base, "operation=insert&table="+tbl))
	_, err = send(t, ins, map[string]any{"name": "x", `n") VALUES (1); DROP TABLE ` + tbl + `; --`: 1})
	if err == nil || !strings.Contains(err.Error(), "42703") {
		t.Errorf("evil column: %v, want SQLSTATE 42703 (no such column)", err)
	}
	// A value is a value.
	mustSend(t, ins, map[string]any{"name": "'); DROP TABLE " + tbl + "; --"})
	q := target(t, with(base, "query="+url.QueryEscape("SELECT name FROM "+tbl+" WHERE name = :name")))
	if got := mustSend(t, q, map[string]any{"name": "'); DROP TABLE " + tbl + "; --"}).In().Body().([]any); len(got) != 1 {
		t.Errorf("the value came back %d times, want once (and the table still there)", len(got))
	}
	// allowedColumns limits what an inserted or updated map may write.
	guarded := target(t, with(base, "operation=insert&allowedColumns=name,n&table="+tbl))
	if _, err := send(t, guarded, map[string]any{"name": "x", "status": "admin"}); err == nil || !strings.Contains(err.Error(), `column "status" is not in allowedColumns`) {
		t.Errorf("guarded insert: %v", err)
	}
	up := target(t, with(base, "operation=update&allowedColumns=status,id&table="+tbl+"&where="+url.QueryEscape("id = :id")))
	if _, err := send(t, up, map[string]any{"id": 1, "name": "y"}); err == nil || !strings.Contains(err.Error(), `column "name" is not in allowedColumns`) {
		t.Errorf("guarded update: %v", err)
	}
}

// Spec §12.1 builds its SQL with the column name a caller chose; allowedColumns
// refuses every SQL in which that name is anything but an allowed column.
func TestAllowedColumnsStopsFieldInjection(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := testtools.UniqueName("customers")
	testtools.PostgresExec(t, base,
		"CREATE TABLE "+tbl+" (id text, name text, email text, created_at timestamptz DEFAULT now(), password text)",
		"INSERT INTO "+tbl+" (id, name, email, password) VALUES ('1', 'Ada', 'ada@example.com', 'pw1'), ('2', 'Bob', 'bob@example.com', 'pw2')")
	t.Cleanup(func() { testtools.PostgresExec(t, base, "DROP TABLE IF EXISTS "+tbl) })
	p := target(t, with(base, "operation=query&allowedColumns="+url.QueryEscape("id,name,email,created_at,"+tbl)))
	build := func(field string) map[string]any { // what §12.1's Starlang builds
		return map[string]any{
			"query":  "SELECT id, name, email, created_at FROM " + tbl + " WHERE " + field + " ILIKE $1 LIMIT $2",
			"params": []any{"%ada%", int64(10)},
		}
	}
	for field, want := range map[string]int{"name": 1, "email": 1, "id": 0} {
		ex := mustSend(t, p, build(field))
		if rows := ex.In().Body().([]any); len(rows) != want {
			t.Errorf("field %s: %d rows, want %d", field, len(rows), want)
		}
	}
	for _, field := range []string{
		"name ILIKE '%' OR 1=1 --",
		"name ILIKE $1 OR true OR name",
		"id = id OR name",
		"password",
		"(SELECT password FROM " + tbl + " LIMIT 1)",
		"pg_sleep(5) IS NOT NULL OR name",
		"name ILIKE $1; DELETE FROM " + tbl + "; SELECT 1 WHERE name",
		`"password"`,
		"name::text",
		"name /* */",
		"name ILIKE $1 UNION SELECT password, password, password, now() FROM " + tbl + " WHERE name",
	} {
		_, err := send(t, p, build(field))
		if err == nil || !strings.Contains(err.Error(), "allowedColumns refuses") {
			t.Errorf("field %q: %v, want a refusal", field, err)
		}
	}
	// Without the guard the same SQL runs as sent: the user's risk, as docs/postgres.md says.
	open := target(t, with(base, "operation=query"))
	if rows := mustSend(t, open, build("name ILIKE $1 OR true OR name")).In().Body().([]any); len(rows) != 2 {
		t.Errorf("unguarded injection: %d rows (the test expects the injection to widen the result to 2)", len(rows))
	}
}

func TestErrorsNameTheProblemWithoutThePassword(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	u, _ := url.Parse(base)
	secret := "Wr0ng-S3cret-Pw"
	badPw := *u
	badPw.User = url.UserPassword(u.User.Username(), secret)
	p := target(t, badPw.String()+"?query=SELECT+1")
	_, err := send(t, p, nil)
	if err == nil || !strings.Contains(err.Error(), "28P01") || !strings.Contains(err.Error(), "check the user and password") {
		t.Errorf("auth failure: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the error shows the password: %v", err)
	}
	// password= option, refused connection: a port nobody listens on.
	port := testtools.FreePort(t)
	p = target(t, fmt.Sprintf("postgres://app@127.0.0.1:%d/db?query=SELECT+1&connectTimeout=2s&password=%s", port, secret))
	_, err = send(t, p, nil)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "is PostgreSQL running") {
		t.Errorf("refused: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the error shows the password: %v", err)
	}
	// SQL errors carry the SQLSTATE.
	q := target(t, with(base, "operation=query"))
	if _, err := send(t, q, map[string]any{"query": "SELEC 1"}); err == nil || !strings.Contains(err.Error(), "SQLSTATE 42601") {
		t.Errorf("syntax error: %v", err)
	}
	if _, err := send(t, q, map[string]any{"query": "SELECT * FROM no_such_table_x"}); err == nil || !strings.Contains(err.Error(), "42P01") {
		t.Errorf("missing table: %v", err)
	}
	// Bad URIs are refused when the endpoint is built, with the password hidden.
	for raw, want := range map[string]string{
		"postgres://db:5432/x?operation=insert":               "needs table=",
		"postgres://db:5432/x?operation=delete&table=t":       "needs where=",
		"postgres://db:5432/x?operation=select":               "operation=\"select\" is not one of the allowed values",
		"postgres://db:5432":                                  "needs a database name",
		"postgres://db:99999/x":                               "not a port number",
		"postgres://u:pw@db/x?user=v":                         "the user is given twice",
		"postgres://db/x?query=" + url.QueryEscape("a :x $1"): "mixes :name and $n",
		"postgres://db/x?passwrd=" + secret:                   `did you mean "password"?`,
	} {
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		_, err = postgres.New(nil).CreateEndpoint(u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	if got := postgres.Spec.Redact("postgres://app:" + secret + "@db/x?password=" + secret); strings.Contains(got, secret) {
		t.Errorf("Redact left the password: %s", got)
	}
}

// terminate ends every connection Helix's pools hold to db (a database of the test's
// own, so that tests running beside it keep their connections).
func terminate(t *testing.T, db string) {
	t.Helper()
	testtools.PostgresExec(t, db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'helix' AND datname = current_database() AND pid <> pg_backend_pid()")
}

func TestPoolRecoversAfterTheServerDroppedItsConnections(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresDatabase(t)
	p := target(t, with(base, "operation=query&maxConns=4"))
	for range 4 {
		mustSend(t, p, map[string]any{"query": "SELECT 1"})
	}
	for round := range 3 {
		terminate(t, base)
		ex, err := send(t, p, map[string]any{"query": "SELECT 2 AS two"})
		if err != nil {
			// A connection the pool handed out while the server was closing it may
			// fail once; the next exchange must work.
			t.Logf("round %d: first exchange after the terminate failed: %v", round, err)
			ex = mustSend(t, p, map[string]any{"query": "SELECT 2 AS two"})
		}
		if got := jsonOf(t, ex.In().Body()); got != `[{"two":2}]` {
			t.Errorf("round %d: %s", round, got)
		}
	}
}

// collector is a processor that records bodies; fail makes chosen ones fail.
type collector struct {
	mu   sync.Mutex
	got  []any
	fail func(body any) bool
	seen chan struct{}
}

func newCollector() *collector { return &collector{seen: make(chan struct{}, 100000)} }

func (c *collector) Process(_ context.Context, ex *exchange.Exchange) error {
	c.mu.Lock()
	c.got = append(c.got, ex.In().Body())
	c.mu.Unlock()
	c.seen <- struct{}{}
	if c.fail != nil && c.fail(ex.In().Body()) {
		return errors.New("refused by the test")
	}
	return nil
}

func (c *collector) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-c.seen:
		case <-time.After(testtools.StartupBound):
			t.Fatalf("fewer than %d exchanges arrived", n)
		}
	}
}

func trigger(t *testing.T, raw string, p component.Processor) component.Consumer {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := postgres.New(nil).CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ep.CreateConsumer(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

func count(t *testing.T, base, sql string) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPollingMarksHandledRowsOnly(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := testtools.UniqueName("jobs")
	testtools.PostgresExec(t, base,
		"CREATE TABLE "+tbl+" (id int PRIMARY KEY, what text, done boolean DEFAULT false, failed boolean DEFAULT false)",
		"INSERT INTO "+tbl+" (id, what) SELECT g, 'job ' || g FROM generate_series(1, 25) g")
	t.Cleanup(func() { testtools.PostgresExec(t, base, "DROP TABLE IF EXISTS "+tbl) })
	col := newCollector()
	col.fail = func(b any) bool { return b.(map[string]any)["id"] == int64(7) }
	raw := with(base, "delay=50ms&maxRows=10"+
		"&query="+url.QueryEscape("SELECT id, what FROM "+tbl+" WHERE NOT done AND NOT failed ORDER BY id")+
		"&onConsume="+url.QueryEscape("UPDATE "+tbl+" SET done = true WHERE id = :id")+
		"&onConsumeFailed="+url.QueryEscape("UPDATE "+tbl+" SET failed = true WHERE id = :id"))
	c := trigger(t, raw, col)
	col.wait(t, 25)
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(t, base, "SELECT count(*) FROM "+tbl+" WHERE done"); n != 24 {
		t.Errorf("%d rows marked done, want 24", n)
	}
	if n := count(t, base, "SELECT count(*) FROM "+tbl+" WHERE failed AND id = 7"); n != 1 {
		t.Errorf("row 7 not marked failed")
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.got) != 25 {
		t.Errorf("%d exchanges, want 25 (each row once)", len(col.got))
	}
	if b := col.got[0].(map[string]any); b["id"] != int64(1) || b["what"] != "job 1" {
		t.Errorf("first body %v", b)
	}
}

// Helix dies in the middle of a batch and starts again: every row is handled at least
// once, none is lost, and the duplicates are the rows of the batch that never
// committed (at most maxRows).
func TestPollingKilledMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := testtools.UniqueName("stream")
	const rows, batch, killAt = 500, 50, 120
	testtools.PostgresExec(t, base,
		"CREATE TABLE "+tbl+" (id int PRIMARY KEY, done boolean DEFAULT false)",
		fmt.Sprintf("INSERT INTO %s (id) SELECT g FROM generate_series(1, %d) g", tbl, rows))
	t.Cleanup(func() { testtools.PostgresExec(t, base, "DROP TABLE IF EXISTS "+tbl) })
	raw := with(base, fmt.Sprintf("delay=20ms&maxRows=%d", batch)+
		"&query="+url.QueryEscape("SELECT id FROM "+tbl+" WHERE NOT done ORDER BY id FOR UPDATE SKIP LOCKED")+
		"&onConsume="+url.QueryEscape("UPDATE "+tbl+" SET done = true WHERE id = :id"))

	var mu sync.Mutex
	seen := map[int64]int{}
	total := 0
	dying := make(chan struct{})
	first := trigger(t, raw, component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
		mu.Lock()
		seen[ex.In().Body().(map[string]any)["id"].(int64)]++
		total++
		n := total
		mu.Unlock()
		if n == killAt {
			close(dying)
			<-ctx.Done() // the exchange in flight when Helix dies never finishes
			return ctx.Err()
		}
		return nil
	}))
	<-dying
	// Kill: no drain at all; the exchange in flight is cancelled, its batch never commits.
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	_ = first.Stop(dead)
	committed := count(t, base, "SELECT count(*) FROM "+tbl+" WHERE done")
	if committed != killAt/batch*batch {
		t.Errorf("%d rows marked at the kill, want %d (the committed batches)", committed, killAt/batch*batch)
	}

	second := trigger(t, raw, component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
		mu.Lock()
		seen[ex.In().Body().(map[string]any)["id"].(int64)]++
		total++
		mu.Unlock()
		return nil
	}))
	deadline := time.Now().Add(testtools.StartupBound)
	for count(t, base, "SELECT count(*) FROM "+tbl+" WHERE NOT done") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the restarted trigger did not mark every row")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := second.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for id := int64(1); id <= rows; id++ {
		switch n := seen[id]; {
		case n == 0:
			t.Errorf("row %d was never handled", id)
		case n > 1:
			dups += n - 1
		}
	}
	// The uncommitted batch held rows 101..150; rows 101..120 were handled before the
	// kill, so exactly those 20 come twice.
	t.Logf("%d rows, killed after %d exchanges: %d handled twice (the uncommitted batch's rows handled before the kill)", rows, killAt, dups)
	if dups != killAt%batch || dups > batch {
		t.Errorf("%d duplicates, want %d (at most maxRows=%d)", dups, killAt%batch, batch)
	}
}

func TestListenDecodesJSONAndReconnects(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresDatabase(t)
	ch := testtools.UniqueName("events")
	col := newCollector()
	c := trigger(t, with(base, "channel="+ch+"&delay=100ms"), col)
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	notify := func(payload string) {
		testtools.PostgresExec(t, base, fmt.Sprintf("SELECT pg_notify('%s', '%s')", ch, payload))
	}
	notify(`{"order": 42, "items": [1.5]}`)
	notify(`plain text`)
	col.wait(t, 2)
	terminate(t, base)
	// The trigger reconnects within delay; notifications sent meanwhile are lost (LISTEN
	// is at most once), so keep sending until one arrives.
	deadline := time.Now().Add(testtools.StartupBound)
	for {
		notify(`"after"`)
		select {
		case <-col.seen:
		case <-time.After(300 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no notification arrived after the connection was terminated")
			}
			continue
		}
		break
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if got := jsonOf(t, col.got[0]); got != `{"items":[1.5],"order":42}` {
		t.Errorf("JSON payload became %s", got)
	}
	if col.got[1] != "plain text" {
		t.Errorf("text payload became %#v", col.got[1])
	}
	if last := col.got[len(col.got)-1]; last != "after" {
		t.Errorf("last payload %#v", last)
	}
}

// Numbers and booleans are bound as their text, so PostgreSQL converts them by the
// parameter's type as it would a literal: no silent truncation, no missing plans.
func TestParameterConversion(t *testing.T) {
	t.Parallel()
	db := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, db, "CREATE TABLE p (i int, t text, n numeric, b boolean, j jsonb, a int[])")
	ins := target(t, with(db, "operation=insert&table=p"))
	row := mustSend(t, ins, map[string]any{"i": 5.0, "t": 42.5, "n": 0.1, "b": true, "j": []any{1.5, "x"}, "a": []any{int64(1), int64(2)}}).In().Body()
	if got := jsonOf(t, row); got != `{"a":[1,2],"b":true,"i":5,"j":[1.5,"x"],"n":0.1,"t":"42.5"}` {
		t.Errorf("row %s", got)
	}
	row = mustSend(t, ins, map[string]any{"t": int64(7), "j": map[string]any{"k": false}}).In().Body()
	if got := jsonOf(t, row); got != `{"a":null,"b":null,"i":null,"j":{"k":false},"n":null,"t":"7"}` {
		t.Errorf("row %s", got)
	}
	if _, err := send(t, ins, map[string]any{"i": 5.5}); err == nil || !strings.Contains(err.Error(), "22P02") {
		t.Errorf("5.5 into an integer column: %v, want SQLSTATE 22P02 (not a silent 5)", err)
	}
	q := target(t, with(db, "query="+url.QueryEscape("SELECT count(*) AS n FROM p WHERE i = :i")))
	if _, err := send(t, q, map[string]any{"i": 5.5}); err == nil || !strings.Contains(err.Error(), "22P02") {
		t.Errorf("WHERE i = 5.5: %v, want SQLSTATE 22P02", err)
	}
	if got := jsonOf(t, mustSend(t, q, map[string]any{"i": 5.0}).In().Body()); got != `[{"n":1}]` {
		t.Errorf("WHERE i = 5.0: %s", got)
	}
}

// COPY keeps numbers binary, refuses a fraction for an integer column and writes
// numbers into text columns as text.
func TestCopyConversion(t *testing.T) {
	t.Parallel()
	db := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, db, "CREATE TABLE c (i int, t text, n numeric, f float8, j jsonb)")
	cp := target(t, with(db, "operation=insert&insertMode=copy&table=c"))
	mustSend(t, cp, []any{
		map[string]any{"i": 5.0, "t": 42.5, "n": 0.1, "f": int64(2), "j": map[string]any{"a": 1}},
		map[string]any{"i": int64(6), "t": "x", "n": "1.25", "f": 0.5, "j": []any{true}},
	})
	q := target(t, with(db, "query="+url.QueryEscape("SELECT * FROM c ORDER BY i")))
	if got := jsonOf(t, mustSend(t, q, nil).In().Body()); got != `[{"f":2,"i":5,"j":{"a":1},"n":0.1,"t":"42.5"},{"f":0.5,"i":6,"j":[true],"n":1.25,"t":"x"}]` {
		t.Errorf("copied rows %s", got)
	}
	if _, err := send(t, cp, []any{map[string]any{"i": 5.5, "t": "a", "n": 1, "f": 1, "j": nil}}); err == nil || !strings.Contains(err.Error(), "not a whole number") {
		t.Errorf("5.5 into an integer column by COPY: %v", err)
	}
}
