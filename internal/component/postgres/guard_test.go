package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	pgquery "github.com/wasilibs/go-pgquery"
)

// guardAllowed lists two tables and their safe columns; password, secret and
// every other column are not listed.
var guardAllowed = map[string]bool{"customers": true, "orders": true, "id": true, "name": true, "email": true, "customer_id": true}

func TestColumnGuardAccepts(t *testing.T) {
	t.Parallel()
	g := &columnGuard{allowed: guardAllowed, source: "of the test"}
	for _, sql := range []string{
		"SELECT id, name FROM customers WHERE id = $1",
		"SELECT c.id, c.name AS label FROM customers c WHERE c.name ILIKE $1 ORDER BY c.id LIMIT 10",
		"SELECT count(*) FROM customers",
		"WITH x AS (SELECT id FROM customers) SELECT id FROM x",
		"SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.id = $1",
		"INSERT INTO customers (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name RETURNING id",
		"INSERT INTO customers DEFAULT VALUES RETURNING id",
		"UPDATE customers SET name = $1 WHERE id = $2 RETURNING id, name",
		"DELETE FROM customers WHERE id IN ($1, $2)",
		"DELETE FROM customers WHERE id = $1 AND NOT name = $2",
		"DELETE FROM customers WHERE (id = $1 OR id = $2) AND name <> $3",
		"UPDATE customers SET name = $1 WHERE $2 = id",
		"SELECT id FROM customers WHERE id = $1 FOR UPDATE",
	} {
		if err := g.check(sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}

func TestColumnGuardRefuses(t *testing.T) {
	t.Parallel()
	g := &columnGuard{allowed: guardAllowed, source: "of the test"}
	for sql, want := range map[string]string{
		"SELECT * FROM customers":                                                                      "at offset 7: * reads every column",
		"SELECT c.* FROM customers c":                                                                  "* reads every column",
		"SELECT (c).* FROM customers c":                                                                "allowedColumns refuses", // the * or the whole row c, whichever the walk meets first
		"TABLE customers":                                                                              "* reads every column",
		"SELECT id FROM (SELECT * FROM customers) s":                                                   "* reads every column",
		"WITH x AS (SELECT * FROM customers) SELECT id FROM x":                                         "* reads every column",
		"SELECT id FROM customers WHERE EXISTS (SELECT * FROM orders)":                                 "* reads every column",
		"SELECT customers FROM customers":                                                              `"customers" names a table or alias`,
		"SELECT (c).password FROM customers c":                                                         `"c" names a table or alias`,
		"SELECT row_to_json(c) FROM customers c":                                                       `"c" names a table or alias`,
		"SELECT to_jsonb(customers) FROM customers":                                                    `"customers" names a table or alias`,
		"SELECT id FROM customers WHERE customers IS NOT NULL":                                         `"customers" names a table or alias`,
		"SELECT s FROM (SELECT id FROM customers) s":                                                   `"s" names a table or alias`,
		"SELECT id FROM customers id":                                                                  `"id" names a table or alias`,
		"SELECT customers.customers FROM customers":                                                    `"customers" names a table or alias`,
		"SELECT id FROM customers WHERE id = $1 ORDER BY customers":                                    `"customers" names a table or alias`,
		"INSERT INTO customers (id) VALUES ($1) RETURNING customers":                                   `"customers" names a table or alias`,
		"INSERT INTO customers (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET name = (excluded).name": `"excluded" names a table or alias`,
		"WITH x AS (SELECT password AS id FROM customers) SELECT id FROM x":                            `column "password" is not in allowedColumns`,
		"SELECT id FROM customers ORDER BY password":                                                   `column "password"`,
		"SELECT id FROM customers GROUP BY password":                                                   `column "password"`,
		"SELECT id FROM customers c(id, name)":                                                         "renames a source's columns by position",
		"SELECT id FROM customers NATURAL JOIN orders":                                                 "NATURAL JOIN",
		"SELECT id FROM customers JOIN orders USING (id)":                                              "USING",
		"INSERT INTO customers VALUES ($1, $2)":                                                        "INSERT without a column list",
		"INSERT INTO customers SELECT id, name FROM customers":                                         "INSERT without a column list",
		"INSERT INTO customers (password) VALUES ($1)":                                                 `INSERT writes column "password"`,
		"INSERT INTO customers (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET password = $2":          `ON CONFLICT … SET writes column "password"`,
		"INSERT INTO customers (id) VALUES ($1) ON CONFLICT (password) DO NOTHING":                     `column "password"`,
		"UPDATE customers SET password = $1 WHERE id = $2":                                             `UPDATE … SET writes column "password"`,
		"UPDATE customers SET (name, password) = ($1, $2) WHERE id = $3":                               `column "password"`,
		"UPDATE customers SET name = $1":                                                               "UPDATE without WHERE changes every row",
		"DELETE FROM customers":                                                                        "DELETE without WHERE changes every row; add WHERE column = $n, or set allowUnfiltered=true",
		"DELETE FROM customers WHERE NOT id = $1":                                                      "does not narrow the rows",
		"DELETE FROM customers WHERE id <> $1":                                                         "does not narrow the rows",
		"DELETE FROM customers WHERE id = $1 OR name <> $2":                                            "does not narrow the rows",
		"DELETE FROM customers WHERE id = id":                                                          "does not narrow the rows",
		"DELETE FROM customers WHERE id IN (SELECT id FROM customers)":                                 "does not narrow the rows",
		"DELETE FROM customers WHERE id = $1 IS NOT FALSE":                                             "does not narrow the rows",
		"WITH d AS (DELETE FROM customers RETURNING id) SELECT id FROM d":                              "DELETE without WHERE",
		"SELECT id FROM secrets":                                                                       `table "secrets" is not in allowedColumns`,
		"SELECT id FROM other.customers":                                                               `table "other"`,
		"SELECT id FROM customers; SELECT id FROM customers":                                           "2 statements",
		"":                                 "0 statements",
		"DROP TABLE customers":             "only SELECT, INSERT, UPDATE and DELETE",
		"COPY customers TO STDOUT":         "only SELECT",
		"EXPLAIN SELECT id FROM customers": "only SELECT",
		"MERGE INTO customers c USING orders o ON c.id = o.customer_id WHEN MATCHED THEN DELETE": "only SELECT",
		"SELECT id FROM customers WHERE":    "parser does not accept it",
		"SELECT x.id FROM customers":        `"x" is neither a table`,
		`SELECT "ID" FROM customers`:        `column "ID" is not in allowedColumns`,
		`SELECT id FROM "Customers"`:        `table "Customers" is not in allowedColumns`,
		`SELECT "Customers" FROM customers`: `"Customers" names a table or alias`,
	} {
		err := g.check(sql)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", sql, err, want)
		}
	}
	bulk := &columnGuard{allowed: guardAllowed, allowUnfiltered: true, source: "of the test"}
	for _, sql := range []string{"DELETE FROM customers", "UPDATE customers SET name = $1 WHERE NOT id = $2"} {
		if err := bulk.check(sql); err != nil {
			t.Errorf("allowUnfiltered: %s: %v", sql, err)
		}
	}
}

// Deep, long and odd input gets an error or an answer, never a panic or a hang.
func TestColumnGuardHostileInput(t *testing.T) {
	t.Parallel()
	g := &columnGuard{allowed: guardAllowed, source: "of the test"}
	deep := "SELECT id FROM customers WHERE " + strings.Repeat("(", 100000) + "id = $1" + strings.Repeat(")", 100000)
	if err := g.check(deep); err == nil {
		t.Errorf("100000 nested parentheses accepted")
	}
	wide := "SELECT " + strings.Repeat("id, ", 10000) + "name FROM customers"
	if err := g.check(wide); err != nil {
		t.Errorf("a long select list: %v", err)
	}
	huge := "SELECT " + strings.Repeat("id, ", 200000) + "name FROM customers"
	if err := g.check(huge); err == nil || !strings.Contains(err.Error(), "800026 bytes long; the guard reads at most 65536") {
		t.Errorf("a huge select list: %v", err)
	}
	for _, sql := range []string{"\x00", "SELECT \xff FROM customers", "SELECT id FROM customers WHERE id = $99999999999", "/*", "'"} {
		_ = g.check(sql)
	}
}

// FuzzColumnGuard checks the guard against an independent reading of PostgreSQL's
// parse tree (its JSON form): whatever the guard accepts reads and writes listed
// columns only, names listed tables only and hides no * or whole-row reference.
func FuzzColumnGuard(f *testing.F) {
	for _, seed := range []string{
		"SELECT id, name FROM customers WHERE id = $1",
		"SELECT c.id FROM customers c JOIN orders o ON o.customer_id = c.id",
		"WITH x AS (SELECT id FROM customers) SELECT x.id FROM x",
		"INSERT INTO customers (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name RETURNING id",
		"UPDATE customers SET name = $1 WHERE id = $2",
		"DELETE FROM customers WHERE id IN ($1, $2) RETURNING name",
		"SELECT * FROM customers", "SELECT (c).* FROM customers c", "SELECT customers FROM customers",
		"SELECT row_to_json(c) FROM customers c", "SELECT id FROM customers NATURAL JOIN orders",
		"SELECT id FROM customers c(name)", "INSERT INTO customers VALUES ($1)", "DELETE FROM customers WHERE NOT id = $1",
		"SELECT id FROM customers id", "TABLE customers", "SELECT (SELECT password FROM customers) AS id FROM customers",
	} {
		f.Add(seed)
	}
	g := &columnGuard{allowed: guardAllowed, source: "of the fuzz test"}
	f.Fuzz(func(t *testing.T, sql string) {
		if g.check(sql) != nil {
			return
		}
		tree, err := pgquery.ParseToJSON(sql)
		if err != nil {
			t.Fatalf("accepted %q, which PostgreSQL's parser refuses: %v", sql, err)
		}
		var v any
		if err := json.Unmarshal([]byte(tree), &v); err != nil {
			t.Fatal(err)
		}
		if problem := listedOnly(v, rowSourceNames(v, map[string]bool{})); problem != "" {
			t.Fatalf("accepted %q, yet %s\n%s", sql, problem, tree)
		}
	})
}

// The fuzz test's independent check is not vacuous: it flags what the guard refuses.
func TestFuzzOracleFlagsAttacks(t *testing.T) {
	t.Parallel()
	for _, sql := range []string{
		"SELECT * FROM customers", "SELECT (c).* FROM customers c", "SELECT customers FROM customers",
		"SELECT row_to_json(c) FROM customers c", "SELECT id FROM customers NATURAL JOIN orders",
		"SELECT id FROM customers c(name)", "INSERT INTO customers VALUES ($1)", "DELETE FROM customers",
		"UPDATE customers SET name = $1", "SELECT id FROM customers id", "SELECT password FROM customers",
		"SELECT id FROM secrets", `SELECT "ID" FROM customers`, "INSERT INTO customers (password) VALUES ($1)",
		"INSERT INTO customers (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET password = $2",
		"SELECT id FROM other.customers", "INSERT INTO secrets (id) VALUES ($1)",
	} {
		tree, err := pgquery.ParseToJSON(sql)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal([]byte(tree), &v); err != nil {
			t.Fatal(err)
		}
		if listedOnly(v, rowSourceNames(v, map[string]bool{})) == "" {
			t.Errorf("the oracle finds nothing wrong with %q\n%s", sql, tree)
		}
	}
}

// rowSourceNames collects every relname, aliasname and ctename of a JSON parse tree,
// and the CTE names again as "cte:name".
func rowSourceNames(v any, into map[string]bool) map[string]bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "relname" || k == "aliasname" || k == "ctename") {
				into[strings.ToLower(s)] = true
			}
			if s, ok := x.(string); ok && k == "ctename" {
				into["cte:"+strings.ToLower(s)] = true // a FROM may name a CTE without listing it
			}
			rowSourceNames(x, into)
		}
		if _, ok := v["OnConflictClause"]; ok {
			into["excluded"] = true
		}
		if oc, ok := v["onConflictClause"]; ok && oc != nil {
			into["excluded"] = true
		}
	case []any:
		for _, x := range v {
			rowSourceNames(x, into)
		}
	}
	return into
}

// listedOnly reports the first thing in a JSON parse tree that reads or writes an
// unlisted column ("" when there is none): a *, a column reference to an unlisted
// or row-source name, an unlisted table, a renaming alias, a NATURAL or USING join,
// an INSERT without columns, a written unlisted column, an UPDATE or DELETE
// without WHERE.
func listedOnly(v any, sources map[string]bool) string {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			if p := listedOnly(x, sources); p != "" {
				return p
			}
		}
	case map[string]any:
		for k, x := range v {
			if p := jsonNodeProblem(k, x, sources); p != "" {
				return p
			}
			if p := listedOnly(x, sources); p != "" {
				return p
			}
		}
	}
	return ""
}

func jsonNodeProblem(kind string, x any, sources map[string]bool) string {
	node, _ := x.(map[string]any)
	str := func(key string) string { s, _ := node[key].(string); return s }
	list := func(key string) []any { l, _ := node[key].([]any); return l }
	resTargetNames := func(key string) string {
		for _, item := range list(key) {
			rt, _ := item.(map[string]any)["ResTarget"].(map[string]any)
			name, _ := rt["name"].(string)
			if !guardAllowed[name] || sources[strings.ToLower(name)] {
				return fmt.Sprintf("%s writes %q", kind, name)
			}
		}
		return ""
	}
	switch kind {
	case "A_Star":
		return "it has a *"
	case "ColumnRef":
		fields := list("fields")
		if len(fields) == 0 {
			return "an empty column reference"
		}
		last, _ := fields[len(fields)-1].(map[string]any)["String"].(map[string]any)
		name, _ := last["sval"].(string)
		if name == "" || !guardAllowed[name] || sources[strings.ToLower(name)] {
			return fmt.Sprintf("it refers to column %q", name)
		}
	case "RangeVar", "relation": // a typed RangeVar field (INSERT INTO, UPDATE, DELETE FROM) has no wrapper
		if !guardAllowed[str("relname")] && !(sources["cte:"+strings.ToLower(str("relname"))] && str("schemaname") == "") {
			return fmt.Sprintf("it reads table %q", str("relname"))
		}
		if s := str("schemaname"); s != "" && !guardAllowed[s] {
			return fmt.Sprintf("it reads schema %q", s)
		}
	case "Alias", "alias":
		if len(list("colnames")) > 0 {
			return "an alias renames columns"
		}
	case "JoinExpr":
		if node["isNatural"] == true || len(list("usingClause")) > 0 {
			return "it joins NATURAL or USING"
		}
	case "InsertStmt":
		if node["selectStmt"] != nil && len(list("cols")) == 0 {
			return "it inserts without a column list"
		}
		return resTargetNames("cols")
	case "UpdateStmt":
		if node["whereClause"] == nil {
			return "it updates without WHERE"
		}
		return resTargetNames("targetList")
	case "DeleteStmt":
		if node["whereClause"] == nil {
			return "it deletes without WHERE"
		}
	case "OnConflictClause", "onConflictClause":
		return resTargetNames("targetList")
	case "IndexElem":
		if n := str("name"); n != "" && !guardAllowed[n] {
			return fmt.Sprintf("it infers on %q", n)
		}
	}
	return ""
}

// Fragments FuzzColumnGuardBuilt puts together: listed and unlisted columns,
// stars, whole rows, joins, subqueries and conditions.
var (
	fuzzItems = []string{"id", "name", "c.id", "c.name", "password", "c.password", "*", "c.*", "(c).*", "c", "customers",
		"row_to_json(c)", "to_jsonb(customers)", "(c).name", "count(*)", "(SELECT password FROM customers LIMIT 1)",
		"(SELECT id FROM customers LIMIT 1)", "$1", "x.id", "o.customer_id", "\"ID\"", "excluded.name", "s"}
	fuzzSources = []string{"customers", "customers c", "customers c(name)", "orders o JOIN customers c ON c.id = o.customer_id",
		"orders o JOIN customers c USING (id)", "orders o NATURAL JOIN customers c", "(SELECT * FROM customers) s",
		"(SELECT id FROM customers) s", "secrets", "public.customers", "x", "customers id", "\"Customers\""}
	fuzzConditions = []string{"", " WHERE id = $1", " WHERE NOT id = $1", " WHERE c.id = $1", " WHERE password = $1",
		" WHERE id = $1 OR name <> $2", " WHERE id IN ($1, $2) AND name LIKE $3", " WHERE c IS NOT NULL", " WHERE id = id"}
	fuzzShapes = []string{
		"SELECT %[1]s FROM %[2]s%[3]s", "SELECT %[1]s, %[4]s FROM %[2]s%[3]s ORDER BY %[4]s",
		"WITH x AS (SELECT %[1]s FROM %[2]s) SELECT %[4]s FROM x%[3]s", "INSERT INTO customers (%[1]s) VALUES ($1) RETURNING %[4]s",
		"INSERT INTO customers (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET name = %[1]s RETURNING %[4]s",
		"INSERT INTO customers (id) SELECT %[1]s FROM %[2]s%[3]s", "UPDATE customers c SET name = %[1]s%[3]s RETURNING %[4]s",
		"DELETE FROM customers c%[3]s RETURNING %[4]s", "SELECT %[1]s FROM %[2]s%[3]s GROUP BY %[4]s",
	}
)

// FuzzColumnGuardBuilt builds statements from fragments and checks, as
// FuzzColumnGuard does, that whatever the guard accepts touches listed columns only.
func FuzzColumnGuardBuilt(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), uint8(1), uint8(0))
	f.Add(uint8(6), uint8(3), uint8(2), uint8(9), uint8(5))
	g := &columnGuard{allowed: guardAllowed, source: "of the fuzz test"}
	pick := func(list []string, i uint8) string { return list[int(i)%len(list)] }
	f.Fuzz(func(t *testing.T, shape, item, source, cond, item2 uint8) {
		sql := fmt.Sprintf(pick(fuzzShapes, shape), pick(fuzzItems, item), pick(fuzzSources, source), pick(fuzzConditions, cond), pick(fuzzItems, item2))
		if g.check(sql) != nil {
			return
		}
		tree, err := pgquery.ParseToJSON(sql)
		if err != nil {
			t.Fatalf("accepted %q, which PostgreSQL's parser refuses: %v", sql, err)
		}
		var v any
		if err := json.Unmarshal([]byte(tree), &v); err != nil {
			t.Fatal(err)
		}
		if problem := listedOnly(v, rowSourceNames(v, map[string]bool{})); problem != "" {
			t.Fatalf("accepted %q, yet %s\n%s", sql, problem, tree)
		}
	})
}
