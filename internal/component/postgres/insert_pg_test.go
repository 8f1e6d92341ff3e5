package postgres_test

import (
	"net/url"
	"testing"

	"github.com/arvenza/helix/internal/testtools"
)

// Rows of every value kind land the same through each insert path: full rows
// (their statement written once, then remembered), rows with a missing key (a
// DEFAULT, written per exchange) and COPY; numeric, text, jsonb, arrays, nulls,
// timestamps and dates read back exactly (COPY: without the timestamp and date).
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
	// COPY sends binary values, and pgx has no binary form for a timestamp or date
	// given as text: COPY rows leave those columns out.
	c1, c2 := row("copy"), row("copy")
	for _, c := range []map[string]any{c1, c2} {
		delete(c, "ts")
		delete(c, "d")
	}
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
		if i >= 6 {
			if m["ts"] != nil || m["d"] != nil {
				t.Errorf("copied row %d has ts %v, d %v", i, m["ts"], m["d"])
			}
			m["ts"], m["d"] = "2026-12-05T10:11:12.123456Z", "2026-12-05"
		}
		if s := jsonOf(t, m); s != want {
			t.Errorf("row %d (%v) reads %s\nwant %s", i, src, s, want)
		}
	}
}
