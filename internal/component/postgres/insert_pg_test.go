package postgres_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/testtools"
)

// Rows of every value kind land the same through each insert path: full rows
// (their statement written once, then remembered), rows with a missing key (a
// DEFAULT, written per exchange) and COPY; numeric, text, jsonb, arrays, nulls,
// timestamps and dates read back exactly.
func TestInsertPathsStoreTheSameValues(t *testing.T) {
	t.Parallel()
	db := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, db, `CREATE TABLE v (id serial PRIMARY KEY, src text, n numeric(12,3), t text, j jsonb, a int[], ta text[],
		ts timestamptz, d date, b boolean, q int, dflt text DEFAULT 'dv')`)
	row := func(src string) map[string]any {
		return map[string]any{"src": src, "n": 1234.125, "t": 42.0, "j": map[string]any{"k": []any{1.5, "x", nil}}, "a": []any{int64(1), 2.0},
			"ta": []any{"p", "q r"}, "ts": "2026-12-05T10:11:12.123456Z", "d": "2026-12-05", "b": true, "q": nil, "dflt": "set"}
	}
	ins := target(t, with(db, "operation=insert&table=v"))
	cp := target(t, with(db, "operation=insert&insertMode=copy&table=v"))
	want := `{"a":[1,2],"b":true,"d":"2026-12-05","dflt":"set","j":{"k":[1.5,"x",null]},"n":1234.125,"q":null,"t":"42","ta":["p","q r"],"ts":"2026-12-05T10:11:12.123456Z"}`
	for _, src := range []string{"full-1", "full-2"} {
		got := mustSend(t, ins, []any{row(src), row(src)}).In().Body().([]any)
		for _, r := range got {
			m := r.(map[string]any)
			delete(m, "id")
			delete(m, "src")
			if s := jsonOf(t, m); s != want {
				t.Errorf("%s answered %s\nwant %s", src, s, want)
			}
		}
	}
	partial := row("partial")
	delete(partial, "dflt")
	mustSend(t, ins, []any{row("partial"), partial})
	// COPY sends binary values: the timestamp and the date, text in the body, are
	// read by the client first (copytext.go) and land as INSERT stores them.
	c1, c2 := row("copy"), row("copy")
	mustSend(t, cp, []any{c1, c2})
	q := target(t, with(db, "query="+url.QueryEscape("SELECT * FROM v ORDER BY id")))
	rows := mustSend(t, q, nil).In().Body().([]any)
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	for i, r := range rows {
		m := r.(map[string]any)
		src := m["src"]
		delete(m, "id")
		delete(m, "src")
		if i == 5 { // the partial list's second row has no dflt: the column's DEFAULT
			if m["dflt"] != "dv" {
				t.Errorf("partial row without dflt has %v, want the DEFAULT dv", m["dflt"])
			}
			m["dflt"] = "set"
		}
		if s := jsonOf(t, m); s != want {
			t.Errorf("row %d (%v) reads %s\nwant %s", i, src, s, want)
		}
	}
}

// COPY reads text for a column whose binary form pgx cannot make from a string —
// timestamps in JSON's and PostgreSQL's spellings, dates, uuids, intervals, inet,
// numbers and booleans as text, bytea — and stores what INSERT stores for the
// same body; text it cannot read fails the COPY with a 422 that names the row, the
// column and what to write, and stores nothing.
func TestCopyReadsTextForTypedColumns(t *testing.T) {
	t.Parallel()
	db := testtools.PostgresDatabase(t)
	const cols = `(src text, tz timestamptz, ts timestamp, d date, u uuid, iv interval, ip inet, n numeric, b boolean, i int8, f float8, by bytea, e mood)`
	testtools.PostgresExec(t, db, `CREATE TYPE mood AS ENUM ('calm', 'busy')`)
	testtools.PostgresExec(t, db, `CREATE TABLE ins `+cols)
	testtools.PostgresExec(t, db, `CREATE TABLE cp `+cols)
	rows := []any{}
	for i, tz := range []string{"2026-12-05T10:11:12.5Z", "2026-12-05 10:11:12+02", "2026-12-05T10:11:12.123456-03:30"} {
		ts := []string{"2026-12-05T10:11:12", "2026-12-05 10:11:12.25", "2026-12-05T10:11:12+05:00"}[i]
		rows = append(rows, map[string]any{"src": tz, "tz": tz, "ts": ts, "d": "2026-12-05", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
			"iv": "1 day 02:03:04", "ip": "10.1.2.3", "n": "12.50", "b": "true", "i": "42", "f": "4.5", "by": "abc", "e": "busy"})
	}
	mustSend(t, target(t, with(db, "operation=insert&table=ins")), rows)
	mustSend(t, target(t, with(db, "operation=insert&insertMode=copy&table=cp")), rows)
	read := func(tbl string) string {
		// Every column as PostgreSQL prints it: the comparison is the server's, not the driver's.
		sql := "SELECT src, tz::text, ts::text, d::text, u::text, iv::text, ip::text, n::text, b::text, i::text, f::text, by::text, e::text FROM " + tbl + " ORDER BY src"
		return jsonOf(t, mustSend(t, target(t, with(db, "query="+url.QueryEscape(sql))), nil).In().Body())
	}
	if got, want := read("cp"), read("ins"); got != want {
		t.Errorf("COPY stored\n%s\nINSERT stored\n%s", got, want)
	}
	cp := target(t, with(db, "operation=insert&insertMode=copy&table=cp"))
	for _, c := range []struct {
		col, val, want string
	}{
		{"tz", "2026-12-05 10:11:12", "give its UTC offset"},
		{"d", "the fifth", `"the fifth" is not a date`},
		{"u", "not-a-uuid", "is not a uuid"},
	} {
		_, err := send(t, cp, []any{map[string]any{"src": "bad"}, map[string]any{"src": "bad"}})
		if err != nil {
			t.Fatalf("rows without the column: %v", err)
		}
		bad := []any{map[string]any{"src": "bad-" + c.col, c.col: c.val}, map[string]any{"src": "bad-" + c.col, c.col: c.val}}
		_, err = send(t, cp, bad)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `row 0, column "`+c.col+`"`) {
			t.Errorf("%s = %q by COPY: %v, want an error naming row 0, the column and %q", c.col, c.val, err, c.want)
		}
		var hs interface{ HTTPStatus() int }
		if !errors.As(err, &hs) || hs.HTTPStatus() != http.StatusUnprocessableEntity {
			t.Errorf("%s = %q by COPY: status of %v is not 422", c.col, c.val, err)
		}
	}
	n := mustSend(t, target(t, with(db, "query="+url.QueryEscape("SELECT count(*) AS n FROM cp WHERE src LIKE 'bad-%'"))), nil).In().Body()
	if got := jsonOf(t, n); got != `[{"n":0}]` {
		t.Errorf("refused COPYs stored rows: %s", got)
	}
}
