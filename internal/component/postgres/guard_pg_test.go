package postgres_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/component/postgres"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/uri"
)

// secretTable makes a table with a column allowedColumns does not list and a
// value that must never come back; it returns the table's name and the value.
func secretTable(t *testing.T, base string) (string, string) {
	t.Helper()
	tbl := testtools.UniqueName("guarded")
	secret := "S3CRET-" + tbl
	testtools.PostgresExec(t, base,
		"CREATE TABLE "+tbl+" (id int PRIMARY KEY, name text, secret text)",
		fmt.Sprintf("INSERT INTO %s VALUES (1, 'Ada', '%s'), (2, 'Bob', '%s'), (3, 'Cy', '%s')", tbl, secret, secret, secret))
	t.Cleanup(func() { testtools.PostgresExec(t, base, "DROP TABLE IF EXISTS "+tbl) })
	return tbl, secret
}

// wholeRowAttacks read the unlisted column without naming it; %[1]s is the table.
var wholeRowAttacks = []string{
	"SELECT * FROM %[1]s",
	"SELECT %[1]s.* FROM %[1]s",
	"SELECT (%[1]s).* FROM %[1]s",
	"SELECT %[1]s FROM %[1]s",
	"SELECT id, %[1]s FROM %[1]s WHERE id = $1",
	"SELECT id FROM %[1]s WHERE id = $1 ORDER BY %[1]s",
	"TABLE %[1]s",
	"SELECT DISTINCT %[1]s FROM %[1]s",
	"SELECT id FROM %[1]s WHERE %[1]s IN ($1)",
	"INSERT INTO %[1]s (id, name) VALUES ($1, $2) RETURNING *",
	"INSERT INTO %[1]s (id, name) VALUES ($1, $2) RETURNING %[1]s",
	"UPDATE %[1]s SET name = name WHERE id = $1 RETURNING *",
	"UPDATE %[1]s SET name = name WHERE id = $1 RETURNING %[1]s",
	"DELETE FROM %[1]s WHERE id = $1 RETURNING *",
	"SELECT row_to_json(%[1]s) FROM %[1]s",
	"SELECT to_jsonb(%[1]s) FROM %[1]s",
	"SELECT id FROM %[1]s NATURAL JOIN %[1]s",
}

// params gives a statement the parameters it uses.
func params(sql string) []any {
	switch {
	case strings.Contains(sql, "$2"):
		return []any{int64(100), "x"}
	case strings.Contains(sql, "$1"):
		return []any{int64(1)}
	}
	return []any{}
}

// With allowedColumns, SQL from the body that reads every column (*, t.*, (t).*, a
// table's name used as a column) is refused, and no secret comes back.
func TestAllowedColumnsRefusesStarsAndWholeRows(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl, secret := secretTable(t, base)
	p := target(t, with(base, "operation=query&allowedColumns="+url.QueryEscape("id,name,"+tbl)))
	for _, attack := range wholeRowAttacks {
		sql := fmt.Sprintf(attack, tbl)
		ex, err := send(t, p, map[string]any{"query": sql, "params": params(sql)})
		if out := jsonOf(t, ex.In().Body()); strings.Contains(out, secret) {
			t.Errorf("%s: the secret came back: %s", sql, out)
		}
		if err == nil || !strings.Contains(err.Error(), "allowedColumns refuses") {
			t.Errorf("%s: %v, want a refusal", sql, err)
		}
	}
	for sql, want := range map[string]string{
		"SELECT * FROM " + tbl:                              "* reads every column",
		"SELECT " + tbl + ".* FROM " + tbl:                  "* reads every column",
		"SELECT " + tbl + " FROM " + tbl:                    "used as a column it is the whole row",
		"SELECT id FROM " + tbl + " WHERE secret = $1":      `"secret"`,
		"DELETE FROM " + tbl + " WHERE id = $1 RETURNING *": "name the columns you need",
	} {
		_, err := send(t, p, map[string]any{"query": sql, "params": params(sql)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", sql, err, want)
		}
	}
	// The same statements as query= of the configuration fail to load.
	for _, attack := range wholeRowAttacks {
		sql := fmt.Sprintf(attack, tbl)
		u, err := uri.Parse(with(base, "operation=query&allowedColumns="+url.QueryEscape("id,name,"+tbl)+"&query="+url.QueryEscape(sql)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := postgres.New(nil).CreateEndpoint(u); err == nil || !strings.Contains(err.Error(), "allowedColumns refuses the SQL of option query=") {
			t.Errorf("query=%s: %v, want a refusal", sql, err)
		}
	}
	// What the guard is for still works.
	ex := mustSend(t, p, map[string]any{"query": "SELECT id, name FROM " + tbl + " WHERE id = $1", "params": []any{int64(2)}})
	if got := jsonOf(t, ex.In().Body()); got != `[{"id":2,"name":"Bob"}]` {
		t.Errorf("allowed query: %s", got)
	}
}

// With allowedColumns, UPDATE and DELETE from the body need a WHERE that narrows the
// rows; allowUnfiltered=true lifts that.
func TestAllowedColumnsNeedsAFilterToChangeRows(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl, _ := secretTable(t, base)
	p := target(t, with(base, "operation=exec&allowedColumns="+url.QueryEscape("id,name,"+tbl)))
	for _, sql := range []string{
		"DELETE FROM " + tbl,
		"DELETE FROM " + tbl + " WHERE NOT id = $1",
		"DELETE FROM " + tbl + " WHERE id <> $1",
		"DELETE FROM " + tbl + " WHERE id = $1 OR NOT id = $1",
		"UPDATE " + tbl + " SET name = $1",
		"UPDATE " + tbl + " SET name = $1 WHERE NOT id = $2",
		"UPDATE " + tbl + " SET name = $1 WHERE name LIKE $2",
	} {
		var args []any
		for i := 1; i <= 2; i++ {
			if strings.Contains(sql, fmt.Sprintf("$%d", i)) {
				args = append(args, "1")
			}
		}
		if _, err := send(t, p, map[string]any{"query": sql, "params": args}); err == nil || !strings.Contains(err.Error(), "allowUnfiltered=true") {
			t.Errorf("%s: %v, want a refusal that names allowUnfiltered=true", sql, err)
		}
	}
	if n := count(t, base, "SELECT count(*) FROM "+tbl+" WHERE name IN ('Ada', 'Bob', 'Cy')"); n != 3 {
		t.Fatalf("%d rows left untouched, want 3", n)
	}
	mustSend(t, p, map[string]any{"query": "DELETE FROM " + tbl + " WHERE id = $1 AND NOT name = $2", "params": []any{int64(3), "x"}})
	bulk := target(t, with(base, "operation=exec&allowUnfiltered=true&allowedColumns="+url.QueryEscape("id,name,"+tbl)))
	mustSend(t, bulk, map[string]any{"query": "UPDATE " + tbl + " SET name = $1", "params": []any{"all"}})
	if n := count(t, base, "SELECT count(*) FROM "+tbl+" WHERE name = 'all'"); n != 2 {
		t.Errorf("allowUnfiltered=true: %d rows changed, want 2", n)
	}
}

// SQL of the configuration (query=, where=) is guarded when the endpoint is made,
// and the rows insert, update and delete answer show listed columns only.
func TestAllowedColumnsGuardsConfiguredSQLAndAnswers(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl, secret := secretTable(t, base)
	allowed := "allowedColumns=" + url.QueryEscape("id,name,"+tbl)
	for opts, want := range map[string]string{
		"operation=query&query=" + url.QueryEscape("SELECT * FROM "+tbl+" WHERE id = :id"): "allowedColumns refuses the SQL of option query= at offset 7: *",
		"operation=query&query=" + url.QueryEscape("SELECT to_jsonb(g) FROM "+tbl+" g"):    `"g" names a table or alias`,
		"operation=query&query=" + url.QueryEscape("SELECT secret FROM "+tbl):              `column "secret" is not in allowedColumns`,
		"operation=delete&table=" + tbl + "&where=true":                                    "allowUnfiltered=true",
		"operation=update&table=" + tbl + "&where=" + url.QueryEscape("NOT id = :id"):      "allowUnfiltered=true",
		"operation=delete&table=" + tbl + "&where=" + url.QueryEscape("secret = :s"):       `column "secret" is not in allowedColumns`,
	} {
		raw := with(base, allowed+"&"+opts)
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		_, err = postgres.New(nil).CreateEndpoint(u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", opts, err, want)
		}
	}
	// allowUnfiltered=true lets where=true through.
	target(t, with(base, allowed+"&allowUnfiltered=true&operation=delete&table="+tbl+"&where=true"))

	for _, tc := range []struct {
		op   string
		body map[string]any
		want string
	}{
		{"operation=insert&table=" + tbl, map[string]any{"id": int64(9), "name": "x"}, `{"id":9,"name":"x"}`},
		{"operation=update&table=" + tbl + "&where=" + url.QueryEscape("id = :id"), map[string]any{"id": int64(2), "name": "x"}, `[{"id":2,"name":"x"}]`},
		{"operation=delete&table=" + tbl + "&where=" + url.QueryEscape("id = :id"), map[string]any{"id": int64(2)}, `[{"id":2,"name":"x"}]`},
	} {
		p := target(t, with(base, allowed+"&"+tc.op))
		out := jsonOf(t, mustSend(t, p, tc.body).In().Body())
		if strings.Contains(out, secret) || out != tc.want {
			t.Errorf("%s answers %s, want %s (the listed columns only)", tc.op, out, tc.want)
		}
	}
}

// A quoted "ID" is another column than the listed id: the guard compares names as
// PostgreSQL reads them, in SQL and in the keys of an inserted map.
func TestAllowedColumnsQuotedNamesAreExact(t *testing.T) {
	t.Parallel()
	base := testtools.PostgresURL(t)
	tbl := testtools.UniqueName("cased")
	testtools.PostgresExec(t, base,
		"CREATE TABLE "+tbl+` (id int, "ID" text)`,
		"INSERT INTO "+tbl+` VALUES (1, 'S3CRET')`)
	t.Cleanup(func() { testtools.PostgresExec(t, base, "DROP TABLE IF EXISTS "+tbl) })
	q := target(t, with(base, "operation=query&allowedColumns="+url.QueryEscape("id,"+tbl)))
	ex, err := send(t, q, map[string]any{"query": `SELECT "ID" FROM ` + tbl, "params": []any{}})
	if err == nil || !strings.Contains(err.Error(), `column "ID" is not in allowedColumns`) || strings.Contains(jsonOf(t, ex.In().Body()), "S3CRET") {
		t.Errorf(`SELECT "ID": %v %s`, err, jsonOf(t, ex.In().Body()))
	}
	ins := target(t, with(base, "operation=insert&allowedColumns=id&table="+tbl))
	if _, err := send(t, ins, map[string]any{"id": int64(2), "ID": "written"}); err == nil || !strings.Contains(err.Error(), `column "ID" is not in allowedColumns`) {
		t.Errorf(`insert "ID": %v`, err)
	}
}
