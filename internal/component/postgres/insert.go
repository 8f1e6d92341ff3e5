package postgres

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// insertColumns returns the sorted union of the rows' keys, and whether every row
// has every one of them (full). The usual body — rows of the same keys — is read
// without building a set: the first row's keys, then a check that each other row
// has as many keys and each of them.
func insertColumns(rows []map[string]any) (cols []string, full bool) {
	if len(rows) == 0 {
		return nil, true
	}
	cols = make([]string, 0, len(rows[0]))
	for k := range rows[0] {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	full = true
	for _, r := range rows[1:] {
		if !sameKeys(r, cols) {
			full = false
			break
		}
	}
	if full {
		return cols, true
	}
	set := make(map[string]bool, len(cols))
	for _, r := range rows {
		for k := range r {
			set[k] = true
		}
	}
	cols = cols[:0]
	for k := range set {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	return cols, false
}

// sameKeys reports whether r's keys are exactly cols.
func sameKeys(r map[string]any, cols []string) bool {
	if len(r) != len(cols) {
		return false
	}
	for _, c := range cols {
		if _, ok := r[c]; !ok {
			return false
		}
	}
	return true
}

// insertSQL writes the INSERT of rows into the endpoint's table: a row's missing
// column is DEFAULT, every other value a $n parameter. args holds the values in
// parameter order (paramValue's forms).
func (e *endpoint) insertSQL(cols []string, rows []map[string]any) string {
	var b strings.Builder
	// Sized once for "$n, " per value: the statement of a large batch is
	// written without growing.
	b.Grow(64 + 16*len(cols) + 8*len(rows)*len(cols))
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
	n := 0
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
			if _, ok := r[c]; !ok {
				b.WriteString("DEFAULT")
				continue
			}
			n++
			b.WriteByte('$')
			b.Write(strconv.AppendInt(num[:0], int64(n), 10))
		}
		b.WriteByte(')')
	}
	if e.returning {
		b.WriteString(" RETURNING *")
	}
	return b.String()
}

// insertArgs returns the parameters of insertSQL's statement for rows.
func insertArgs(cols []string, rows []map[string]any) []any {
	args := make([]any, 0, len(rows)*len(cols))
	for _, r := range rows {
		for _, c := range cols {
			if v, ok := r[c]; ok {
				args = append(args, paramValue(v))
			}
		}
	}
	return args
}

// stmtCache remembers the INSERT statements of full rows (every row has every
// column) by column set and row count, so that a stream of same-shaped exchanges
// writes its statement once. Bounded by the text it holds: callers choose the
// column sets, and past the bound statements are written again, not remembered.
type stmtCache struct {
	mu    sync.RWMutex
	sql   map[string]string
	bytes int
}

// maxStmtCacheBytes bounds the statement text one producer remembers.
const maxStmtCacheBytes = 1 << 20

// statement returns the INSERT of len(rows) full rows of cols, from the cache or
// written (and remembered) now.
func (s *stmtCache) statement(e *endpoint, cols []string, rows []map[string]any) string {
	var kb [128]byte
	key := appendStmtKey(kb[:0], cols, len(rows))
	s.mu.RLock()
	sql, ok := s.sql[string(key)] // no allocation: the conversion is only a lookup
	s.mu.RUnlock()
	if ok {
		return sql
	}
	sql = e.insertSQL(cols, rows)
	s.mu.Lock()
	if s.bytes+len(key)+len(sql) <= maxStmtCacheBytes {
		if s.sql == nil {
			s.sql = map[string]string{}
		}
		if _, ok := s.sql[string(key)]; !ok {
			s.sql[string(key)] = sql
			s.bytes += len(key) + len(sql)
		}
	}
	s.mu.Unlock()
	return sql
}

// appendStmtKey names a column list and a row count unambiguously (columnsKey's
// length-prefixed names, then the count).
func appendStmtKey(b []byte, cols []string, rows int) []byte {
	for _, c := range cols {
		b = strconv.AppendInt(b, int64(len(c)), 10)
		b = append(b, ':')
		b = append(b, c...)
	}
	b = append(b, '#')
	return strconv.AppendInt(b, int64(rows), 10)
}

// copyRows is the row source of insertMode=copy: each row's values, prepared by
// copyValue for its column's type, in one slice reused from row to row (pgx
// encodes a row's values before it asks for the next).
type copyRows struct {
	rows []map[string]any
	cols []string
	oids []uint32
	i    int
	vals []any
	err  error
}

func newCopyRows(rows []map[string]any, cols []string, oids []uint32) *copyRows {
	return &copyRows{rows: rows, cols: cols, oids: oids, i: -1, vals: make([]any, len(cols))}
}

func (s *copyRows) Next() bool {
	if s.err != nil {
		return false
	}
	s.i++
	return s.i < len(s.rows)
}

func (s *copyRows) Values() ([]any, error) {
	r := s.rows[s.i]
	for j, c := range s.cols {
		v, err := copyValue(r[c], s.oids[j])
		if err != nil {
			s.err = fmt.Errorf("row %d, column %q: %w", s.i, c, err)
			return nil, s.err
		}
		s.vals[j] = v
	}
	return s.vals, nil
}

func (s *copyRows) Err() error { return s.err }
