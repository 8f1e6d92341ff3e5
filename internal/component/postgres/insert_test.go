package postgres

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// oldInsertStatement is the statement writer insert used before insertColumns,
// insertSQL, insertArgs and the statement cache: the union of the rows' keys built
// in a set and sorted, then one builder per exchange. The new code must write the
// same statements with the same parameters.
func oldInsertStatement(e *endpoint, rows []map[string]any) (string, []any) {
	colSet := map[string]bool{}
	for _, r := range rows {
		for k := range r {
			colSet[k] = true
		}
	}
	cols := make([]string, 0, len(colSet))
	for k := range colSet {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	var b strings.Builder
	var num [20]byte
	b.WriteString("INSERT INTO ")
	b.WriteString(e.tableIdent.Sanitize())
	if len(cols) == 0 {
		b.WriteString(" DEFAULT VALUES")
	} else {
		b.WriteString(" (")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pgx.Identifier{c}.Sanitize())
		}
		b.WriteString(") VALUES ")
	}
	args := make([]any, 0, len(rows)*len(cols))
	for i, r := range rows {
		if len(cols) == 0 {
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, c := range cols {
			if j > 0 {
				b.WriteString(", ")
			}
			v, ok := r[c]
			if !ok {
				b.WriteString("DEFAULT")
				continue
			}
			args = append(args, paramValue(v))
			b.WriteByte('$')
			b.Write(strconv.AppendInt(num[:0], int64(len(args)), 10))
		}
		b.WriteByte(')')
	}
	if e.returning {
		b.WriteString(" RETURNING *")
	}
	return b.String(), args
}

// insertBodies are bodies of every shape insert takes: full rows of every value
// kind, rows with missing keys, rows of the same number of different keys, a row
// with an extra key, empty maps.
func insertBodies() map[string][]map[string]any {
	ts := "2026-12-05T10:11:12.123456Z"
	full := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = map[string]any{"name": fmt.Sprint("n", i), "qty": int64(i), "price": 9.99 + float64(i), "ok": i%2 == 0,
				"doc": map[string]any{"k": []any{1.5, "x"}}, "tags": []any{"a", "b"}, "nums": []any{json.Number("7"), 2},
				"nothing": nil, "at": ts, "big": json.Number("12345678901234567890.5"), "whole": 3.0}
		}
		return out
	}
	return map[string][]map[string]any{
		"one full":               full(1),
		"ten full":               full(10),
		"missing keys":           {{"a": 1.0, "b": "x"}, {"a": 2.0}, {"b": "y"}},
		"same count, other keys": {{"a": 1.0, "b": "x"}, {"a": 2.0, "c": "z"}},
		"extra key later":        {{"a": 1.0}, {"a": 2.0, "b": "y"}},
		"empty map":              {{}},
		"quoted names":           {{`we"ird`: "q", "ID": int64(1), "id": int64(2)}},
	}
}

func TestInsertStatementsMatchTheOldWriter(t *testing.T) {
	for _, returning := range []bool{true, false} {
		e := &endpoint{tableIdent: pgx.Identifier{"sch", "tbl"}, returning: returning}
		p := &producer{e: e}
		for name, rows := range insertBodies() {
			wantSQL, wantArgs := oldInsertStatement(e, rows)
			cols, full := insertColumns(rows)
			for range 2 { // the second time from the cache
				var sql string
				if full {
					sql = p.stmts.statement(e, cols, rows)
				} else {
					sql = e.insertSQL(cols, rows)
				}
				if sql != wantSQL {
					t.Errorf("%s (returning %v):\n got %s\nwant %s", name, returning, sql, wantSQL)
				}
			}
			if args := insertArgs(cols, rows); !reflect.DeepEqual(args, wantArgs) {
				t.Errorf("%s: args %#v, want %#v", name, args, wantArgs)
			}
		}
	}
}

func TestInsertColumnsIsTheUnionAndSaysWhetherRowsAreFull(t *testing.T) {
	for name, rows := range insertBodies() {
		set := map[string]bool{}
		for _, r := range rows {
			for k := range r {
				set[k] = true
			}
		}
		var want []string
		for k := range set {
			want = append(want, k)
		}
		sort.Strings(want)
		wantFull := true
		for _, r := range rows {
			if len(r) != len(want) {
				wantFull = false
			}
		}
		cols, full := insertColumns(rows)
		if len(cols) != len(want) || (len(want) > 0 && !reflect.DeepEqual(cols, want)) {
			t.Errorf("%s: columns %v, want %v", name, cols, want)
		}
		if full != wantFull {
			t.Errorf("%s: full %v, want %v", name, full, wantFull)
		}
	}
}

// A stream of same-shaped exchanges finds its statement without writing it or
// allocating; the cache holds at most maxStmtCacheBytes of text and answers
// correctly past it.
func TestStatementCacheReusesAndIsBounded(t *testing.T) {
	e := &endpoint{tableIdent: pgx.Identifier{"t"}, returning: true}
	p := &producer{e: e}
	rows := insertBodies()["ten full"]
	cols, _ := insertColumns(rows)
	first := p.stmts.statement(e, cols, rows)
	if again := p.stmts.statement(e, cols, rows); unsafe.StringData(again) != unsafe.StringData(first) {
		t.Error("the second same-shaped statement was written again")
	}
	if n := testing.AllocsPerRun(100, func() { p.stmts.statement(e, cols, rows) }); n != 0 {
		t.Errorf("a remembered statement costs %v allocations", n)
	}
	for i := 0; p.stmts.bytes < maxStmtCacheBytes-(64<<10); i++ {
		c := []string{fmt.Sprint("c", i)}
		p.stmts.statement(e, c, []map[string]any{{c[0]: 1.0}})
		if i > 1<<20 {
			t.Fatal("the cache does not fill")
		}
	}
	big := make([]map[string]any, 5000)
	for i := range big {
		big[i] = map[string]any{"x": 1.0, "y": 2.0, "z": 3.0, "w": 4.0}
	}
	bcols, _ := insertColumns(big)
	want := e.insertSQL(bcols, big)
	for range 3 {
		if got := p.stmts.statement(e, bcols, big); got != want {
			t.Fatal("a statement past the bound is wrong")
		}
	}
	if p.stmts.bytes > maxStmtCacheBytes {
		t.Errorf("the cache holds %d bytes of statements, past its bound %d", p.stmts.bytes, maxStmtCacheBytes)
	}
}

// COPY's row source gives each row the values copyValue gives them one by one, in
// a slice reused from row to row: no allocation per row for text, whole numbers and
// fractions; a value its column cannot take names its row and column.
func TestCopyRowsConvertLikeCopyValueWithoutAllocating(t *testing.T) {
	cols := []string{"i", "n", "t", "j", "a", "z"}
	oids := []uint32{pgtype.Int4OID, pgtype.NumericOID, pgtype.TextOID, pgtype.JSONBOID, pgtype.Int8ArrayOID, pgtype.TimestamptzOID}
	rows := []map[string]any{
		{"i": 5.0, "n": 0.1, "t": 42.5, "j": map[string]any{"a": 1.0}, "a": []any{1, json.Number("2")}, "z": "2026-12-05T10:11:12Z"},
		{"i": int64(6), "n": "1.25", "t": "x", "j": []any{true}, "a": nil, "z": nil},
		{"i": json.Number("7"), "n": json.Number("3.5"), "t": true, "j": "\"s\"", "a": []any{}, "z": "2026-12-05 00:00:00+00"},
	}
	src := newCopyRows(rows, cols, oids)
	for i := 0; src.Next(); i++ {
		got, err := src.Values()
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range cols {
			want, err := copyValue(rows[i][c], oids[j])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[j], want) {
				t.Errorf("row %d column %s: %#v, want %#v", i, c, got[j], want)
			}
		}
	}
	if src.Err() != nil {
		t.Fatal(src.Err())
	}

	plain := make([]map[string]any, 200)
	for i := range plain {
		plain[i] = map[string]any{"name": fmt.Sprint("item-", i), "qty": int64(i), "price": 9.99}
	}
	pcols := []string{"name", "price", "qty"}
	poids := []uint32{pgtype.TextOID, pgtype.NumericOID, pgtype.Int4OID}
	var s *copyRows
	n := testing.AllocsPerRun(10, func() {
		s = newCopyRows(plain, pcols, poids)
		for s.Next() {
			if _, err := s.Values(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if perRow := n / float64(len(plain)); perRow >= 0.05 {
		t.Errorf("%.2f allocations per row (%v per %d rows)", perRow, n, len(plain))
	}

	bad := newCopyRows([]map[string]any{{"i": 1.0}, {"i": 5.5}}, []string{"i"}, []uint32{pgtype.Int4OID})
	for bad.Next() {
		if _, err := bad.Values(); err != nil {
			break
		}
	}
	if err := bad.Err(); err == nil || err.Error() != `row 1, column "i": 5.5 is not a whole number` {
		t.Errorf("error %v", err)
	}
	if bad.Next() {
		t.Error("the source goes on after an error")
	}
}

// Exchanges of many shapes at once each get their own shape's statement.
func TestStatementCacheUnderConcurrentShapes(t *testing.T) {
	e := &endpoint{tableIdent: pgx.Identifier{"t"}, returning: true}
	p := &producer{e: e}
	done := make(chan error)
	for g := range 8 {
		go func() {
			for i := range 200 {
				n := 1 + (g+i)%5
				rows := make([]map[string]any, n)
				key := fmt.Sprint("k", i%7)
				for j := range rows {
					rows[j] = map[string]any{key: 1.0, "v": "x"}
				}
				cols, _ := insertColumns(rows)
				if got, want := p.stmts.statement(e, cols, rows), e.insertSQL(cols, rows); got != want {
					done <- fmt.Errorf("%d rows of %v: %s, want %s", n, cols, got, want)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
