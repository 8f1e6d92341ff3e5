package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// insertChunk bounds the rows of one INSERT … VALUES statement (PostgreSQL allows
// 65535 parameters per statement).
const insertChunk = 1000

// producer runs one statement per exchange. Start takes a pool (without
// connecting: a database that is down fails exchanges, not the start); Stop gives it
// back. Safe for concurrent use.
type producer struct {
	e *endpoint

	mu    sync.Mutex
	pool  *pgxpool.Pool
	types map[string][]uint32 // column type OIDs for insertMode=copy, by column list
	stmts stmtCache           // INSERT statements of full rows (insert.go)
	// receiptsReady: the receipts table of durable steps exists (receipts.go).
	receiptsReady bool
}

func (p *producer) Start(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool != nil {
		return nil
	}
	pool, err := p.e.c.acquirePool(p.e.s)
	if err != nil {
		return err
	}
	p.pool = pool
	return nil
}

func (p *producer) Stop(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool == nil {
		return nil
	}
	p.pool = nil
	p.e.c.releasePool(p.e.s)
	return nil
}

func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	p.mu.Lock()
	pool := p.pool
	p.mu.Unlock()
	if pool == nil {
		return fmt.Errorf("%s: producer not started", p.e.redacted)
	}
	var err error
	if key, ok := durable.KeyFrom(ctx); ok {
		err = p.processOnce(ctx, pool, ex, key) // receipts.go
	} else {
		err = p.process(ctx, pool, ex)
	}
	if err != nil {
		var se *sqlError
		if !errors.As(err, &se) {
			// Not the database's answer: the body does not fit the operation (a
			// missing :name, a list of non-maps for insert, a column allowedColumns
			// does not list, SQL the guard refuses).
			err = &bodyError{err: fmt.Errorf("postgres %s: %w", p.e.s.where(), err)}
		}
	}
	return err
}

// bodyError is a body the operation cannot use, found before anything reached the
// database. The body is usually the caller's request, so HTTP callers get 422.
type bodyError struct{ err error }

func (e *bodyError) Error() string   { return e.err.Error() }
func (e *bodyError) Unwrap() error   { return e.err }
func (e *bodyError) HTTPStatus() int { return 422 }

func (p *producer) process(ctx context.Context, pool conn, ex *exchange.Exchange) error {
	e := p.e
	body := decodeBody(ex.In().Body())
	switch e.op {
	case OpQuery, OpExec:
		sql, args, fromBody, err := e.statement(body)
		if err != nil {
			return err
		}
		if fromBody && e.allowed != nil {
			if err := checkGuard(sql, e.allowed); err != nil {
				return err
			}
			if err := e.guard("from the body").check(sql); err != nil {
				return err
			}
		}
		return p.run(ctx, pool, ex, sql, args, e.op != OpExec)
	case OpInsert:
		return p.insert(ctx, pool, ex, body)
	case OpUpdate, OpDelete:
		return p.change(ctx, pool, ex, body)
	}
	return fmt.Errorf("unknown operation %q", e.op)
}

// retry runs f, and once more when it failed before the statement reached the
// server (a connection the server closed while idle in the pool), so that a
// database that came back is used without a failed exchange.
// run executes sql with bound args and sets the row-count headers. With rows, the
// statement's rows become the body (a list of row maps); without, the body is kept.
func (p *producer) run(ctx context.Context, pool conn, ex *exchange.Exchange, sql string, args []any, rows bool) error {
	if !rows {
		tag, err := retry(ctx, func() (pgconn.CommandTag, error) { return pool.Exec(ctx, sql, args...) })
		if err != nil {
			return p.e.describe(err)
		}
		setCounts(ex, tag)
		return nil
	}
	var out []any
	tag, err := retry(ctx, func() (pgconn.CommandTag, error) {
		r, err := pool.Query(ctx, sql, args...)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		out, err = collectRows(r)
		return r.CommandTag(), err
	})
	if err != nil {
		return p.e.describe(err)
	}
	ex.In().SetBody(out)
	setCounts(ex, tag)
	return nil
}

func retry(ctx context.Context, f func() (pgconn.CommandTag, error)) (pgconn.CommandTag, error) {
	tag, err := f()
	if err != nil && pgconn.SafeToRetry(err) && ctx.Err() == nil {
		tag, err = f()
	}
	return tag, err
}

func setCounts(ex *exchange.Exchange, tag pgconn.CommandTag) {
	ex.In().SetHeader(HeaderRowCount, tag.RowsAffected())
	ex.In().SetHeader(HeaderCommandTag, tag.String())
}

// decodeBody turns a JSON text body (string or bytes holding an object or array)
// into its value, so that a body from an HTTP request reads like one from Starlang.
func decodeBody(b any) any {
	var raw []byte
	switch x := b.(type) {
	case []byte:
		raw = x
	case string:
		raw = []byte(x)
	default:
		return b
	}
	t := strings.TrimSpace(string(raw))
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return b
	}
	var v any
	if err := json.Unmarshal([]byte(t), &v); err != nil {
		return b
	}
	return v
}

// statement returns the SQL and arguments of query and exec: the query= option with
// parameters from the body, or the body's own SQL ({"query": …, "params": […]} or
// SQL text). fromBody says the SQL came from the exchange.
func (e *endpoint) statement(body any) (sql string, args []any, fromBody bool, err error) {
	if e.query != "" {
		sql, args, err = bindBody(e.query, body)
		return sql, args, false, err
	}
	switch b := body.(type) {
	case map[string]any:
		q, ok := b["query"].(string)
		if !ok || strings.TrimSpace(q) == "" {
			return "", nil, true, fmt.Errorf(`operation=%s without query= takes the SQL from the body: {"query": "SELECT … $1", "params": [...]}; the body map has no "query" text`, e.op)
		}
		switch ps := b["params"].(type) {
		case nil:
			toks, lerr := lex(q)
			if lerr != nil {
				return "", nil, true, fmt.Errorf("the body's query: %v", lerr)
			}
			if maxParam(toks) > 0 {
				return "", nil, true, fmt.Errorf(`the body's query uses $n parameters but the body has no "params" list`)
			}
			if _, names, _ := bindNamed(q); len(names) > 0 {
				sql, args, err = bindBody(q, b)
				return sql, args, true, err
			}
			return q, nil, true, nil
		case []any:
			args = make([]any, len(ps))
			for i, v := range ps {
				args[i] = paramValue(v)
			}
			return q, args, true, nil
		case map[string]any:
			sql, args, err = bindBody(q, ps)
			return sql, args, true, err
		default:
			return "", nil, true, fmt.Errorf(`the body's "params" must be a list (for $1, $2 …) or a map (for :name), not %T`, ps)
		}
	case string:
		if strings.TrimSpace(b) == "" {
			return "", nil, true, fmt.Errorf(`operation=%s needs SQL: a query= option, or a body {"query": …, "params": [...]} or SQL text; the body is empty`, e.op)
		}
		return b, nil, true, nil
	case []byte:
		return e.statement(string(b))
	case nil:
		return "", nil, true, fmt.Errorf(`operation=%s needs SQL: a query= option, or a body {"query": …, "params": [...]} or SQL text; the body is empty`, e.op)
	}
	return "", nil, true, fmt.Errorf(`operation=%s without query= takes the SQL from the body, which is %T; send {"query": …, "params": [...]}`, e.op, body)
}

// bindBody binds the parameters of sql from body: :name from a map's keys, $1 … from
// a list's items, $1 from a scalar.
func bindBody(sql string, body any) (string, []any, error) {
	rewritten, names, err := bindNamed(sql)
	if err != nil {
		return "", nil, err
	}
	if len(names) > 0 {
		m, ok := body.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("the SQL has :%s parameters, so the body must be a map holding them; it is %s", strings.Join(names, ", :"), describeType(body))
		}
		args := make([]any, len(names))
		var missing []string
		for i, n := range names {
			v, ok := m[n]
			if !ok {
				missing = append(missing, n)
				continue
			}
			args[i] = paramValue(v)
		}
		if len(missing) > 0 {
			return "", nil, fmt.Errorf("the body has no value for :%s (keys: %s)", strings.Join(missing, ", :"), keyList(m))
		}
		return rewritten, args, nil
	}
	toks, err := lex(sql)
	if err != nil {
		return "", nil, err
	}
	n := maxParam(toks)
	if n == 0 {
		return sql, nil, nil
	}
	switch b := body.(type) {
	case []any:
		if len(b) < n {
			return "", nil, fmt.Errorf("the SQL uses $%d but the body list has %d items", n, len(b))
		}
		args := make([]any, n)
		for i := range n {
			args[i] = paramValue(b[i])
		}
		return sql, args, nil
	case map[string]any:
		if ps, ok := b["params"].([]any); ok {
			return bindBody(sql, ps)
		}
		return "", nil, fmt.Errorf("the SQL uses $n parameters: send a list body (or {\"params\": [...]}), or write :name parameters for a map body")
	case nil:
		return "", nil, fmt.Errorf("the SQL uses $%d but the body is empty", n)
	default:
		if n > 1 {
			return "", nil, fmt.Errorf("the SQL uses $%d but the body is one value; send a list", n)
		}
		return sql, []any{paramValue(b)}, nil
	}
}

func describeType(v any) string {
	switch v.(type) {
	case nil:
		return "empty"
	case []any:
		return "a list"
	case string, []byte:
		return "text"
	}
	return fmt.Sprintf("a %T", v)
}

func keyList(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// rowsOf reads an insert's body: a map is one row, a list of maps many.
func rowsOf(body any) ([]map[string]any, bool, error) {
	switch b := body.(type) {
	case map[string]any:
		return []map[string]any{b}, true, nil
	case []any:
		rows := make([]map[string]any, len(b))
		for i, r := range b {
			m, ok := r.(map[string]any)
			if !ok {
				return nil, false, fmt.Errorf("operation=insert takes a map or a list of maps; item %d of the list is %s", i, describeType(r))
			}
			rows[i] = m
		}
		return rows, false, nil
	}
	return nil, false, fmt.Errorf("operation=insert takes a map (one row) or a list of maps (many rows); the body is %s", describeType(body))
}

// listedOnly drops from RETURNING * rows the columns allowedColumns does not
// list, so that insert, update and delete answer only what the caller may see.
func (e *endpoint) listedOnly(rows []any) []any {
	if e.allowed == nil {
		return rows
	}
	for _, r := range rows {
		if m, ok := r.(map[string]any); ok {
			for k := range m {
				if !e.allowed[k] {
					delete(m, k)
				}
			}
		}
	}
	return rows
}

// checkColumns refuses keys that allowedColumns does not list.
func (e *endpoint) checkColumns(cols []string) error {
	if e.allowed == nil {
		return nil
	}
	for _, c := range cols {
		if !e.allowed[c] { // keys are quoted identifiers: "ID" is not the listed id
			return fmt.Errorf("column %q is not in allowedColumns", c)
		}
	}
	return nil
}

func (p *producer) insert(ctx context.Context, pool conn, ex *exchange.Exchange, body any) error {
	e := p.e
	rows, single, err := rowsOf(body)
	if err != nil {
		return err
	}
	cols, full := insertColumns(rows)
	if err := e.checkColumns(cols); err != nil {
		return err
	}
	if len(rows) == 0 {
		ex.In().SetHeader(HeaderRowCount, int64(0))
		if e.returning {
			ex.In().SetBody([]any{})
		}
		return nil
	}
	if e.copyMode && !single {
		if !full {
			for i, r := range rows {
				if len(r) != len(cols) {
					return fmt.Errorf("insertMode=copy needs the same keys in every map; item %d has %s, the list has %s", i, keyList(r), strings.Join(cols, ", "))
				}
			}
		}
		oids, err := p.columnTypes(ctx, pool, cols)
		if err != nil {
			return e.describe(err)
		}
		n, err := pool.CopyFrom(ctx, e.tableIdent, cols, newCopyRows(rows, cols, oids))
		if err != nil {
			return e.describe(err)
		}
		ex.In().SetHeader(HeaderRowCount, n)
		ex.In().SetHeader(HeaderCommandTag, "COPY "+strconv.FormatInt(n, 10))
		return nil
	}
	stmt := func(chunk []map[string]any) (string, []any) {
		if full {
			return p.stmts.statement(e, cols, chunk), insertArgs(cols, chunk)
		}
		return e.insertSQL(cols, chunk), insertArgs(cols, chunk)
	}
	if len(cols) == 0 && len(rows) > 1 {
		return fmt.Errorf("operation=insert: every map of the list is empty; give at least one column")
	}
	var out []any
	var total int64
	run := func(q pgxQuerier) error {
		for start := 0; start < len(rows); start += insertChunk {
			chunk := rows[start:min(start+insertChunk, len(rows))]
			sql, args := stmt(chunk)
			if !e.returning {
				tag, err := q.Exec(ctx, sql, args...)
				if err != nil {
					return err
				}
				total += tag.RowsAffected()
				continue
			}
			r, err := q.Query(ctx, sql, args...)
			if err != nil {
				return err
			}
			got, err := collectRowsCap(r, len(chunk))
			if err != nil {
				return err
			}
			total += r.CommandTag().RowsAffected()
			if out == nil {
				out = got // one chunk (the usual case): no copy
			} else {
				out = append(out, got...)
			}
		}
		return nil
	}
	if len(rows) <= insertChunk {
		_, err = retry(ctx, func() (pgconn.CommandTag, error) { out, total = nil, 0; return pgconn.CommandTag{}, run(pool) })
	} else {
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return run(tx) })
	}
	if err != nil {
		return e.describe(err)
	}
	ex.In().SetHeader(HeaderRowCount, total)
	ex.In().SetHeader(HeaderCommandTag, "INSERT 0 "+strconv.FormatInt(total, 10))
	if e.returning {
		out = e.listedOnly(out)
		if single && len(out) == 1 {
			ex.In().SetBody(out[0])
		} else {
			ex.In().SetBody(out)
		}
	}
	return nil
}

// columnTypes returns the type OIDs of cols in the endpoint's table, asked once per
// set of columns and remembered.
func (p *producer) columnTypes(ctx context.Context, pool conn, cols []string) ([]uint32, error) {
	key := columnsKey(cols)
	p.mu.Lock()
	oids, ok := p.types[key]
	p.mu.Unlock()
	if ok {
		return oids, nil
	}
	idents := make([]string, len(cols))
	for i, c := range cols {
		idents[i] = pgx.Identifier{c}.Sanitize()
	}
	rows, err := pool.Query(ctx, "SELECT "+strings.Join(idents, ", ")+" FROM "+p.e.tableIdent.Sanitize()+" LIMIT 0")
	if err != nil {
		return nil, err
	}
	fields := rows.FieldDescriptions()
	oids = make([]uint32, len(fields))
	for i, f := range fields {
		oids[i] = f.DataTypeOID
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.types == nil {
		p.types = map[string][]uint32{}
	}
	// Callers choose the column sets (the body's keys): past the bound, types are
	// asked again rather than remembered, so the cache cannot grow without end.
	if len(p.types) < maxColumnTypeSets {
		p.types[key] = oids
	}
	p.mu.Unlock()
	return oids, nil
}

// maxColumnTypeSets bounds the column sets whose types one endpoint remembers.
const maxColumnTypeSets = 256

// columnsKey names a list of columns unambiguously: each name is length-prefixed,
// so no name (PostgreSQL drops a NUL byte from a quoted identifier) can make two
// different lists share a key and one list use the other's types.
func columnsKey(cols []string) string {
	var b strings.Builder
	for _, c := range cols {
		b.WriteString(strconv.Itoa(len(c)))
		b.WriteByte(':')
		b.WriteString(c)
	}
	return b.String()
}

// conn is what the operations run on: the pool, or the transaction of a durable
// step's statements and their receipt (receipts.go).
type conn interface {
	pgxQuerier
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// pgxQuerier is what a pool and a transaction share.
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// change runs update and delete: the where= option with :name parameters from the
// body map; for update, the body's other keys are the columns to set.
func (p *producer) change(ctx context.Context, pool conn, ex *exchange.Exchange, body any) error {
	e := p.e
	m, _ := body.(map[string]any)
	if body != nil && m == nil {
		return fmt.Errorf("operation=%s takes a map body (the :name parameters of where=%s)", e.op, describeWhere(e.where))
	}
	where := strings.TrimSpace(e.where)
	whereSQL, names, err := bindNamed(where)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	var args []any
	for _, n := range names {
		v, ok := m[n]
		if !ok {
			return fmt.Errorf("where=%s needs :%s, which the body lacks (keys: %s)", describeWhere(e.where), n, keyList(m))
		}
		used[n] = true
		args = append(args, paramValue(v))
	}
	var b strings.Builder
	if e.op == OpDelete {
		b.WriteString("DELETE FROM ")
		b.WriteString(e.tableIdent.Sanitize())
	} else {
		var cols []string
		for k := range m {
			if !used[k] {
				cols = append(cols, k)
			}
		}
		sort.Strings(cols)
		if len(cols) == 0 {
			return fmt.Errorf("operation=update has nothing to set: the body's keys (%s) are all parameters of where=", keyList(m))
		}
		if err := e.checkColumns(cols); err != nil {
			return err
		}
		b.WriteString("UPDATE ")
		b.WriteString(e.tableIdent.Sanitize())
		b.WriteString(" SET ")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			args = append(args, paramValue(m[c]))
			fmt.Fprintf(&b, "%s = $%d", pgx.Identifier{c}.Sanitize(), len(args))
		}
	}
	b.WriteString(" WHERE ")
	b.WriteString(whereSQL)
	if e.returning {
		b.WriteString(" RETURNING *")
	}
	if err := p.run(ctx, pool, ex, b.String(), args, e.returning); err != nil {
		return err
	}
	if rows, ok := ex.In().Body().([]any); ok && e.returning {
		ex.In().SetBody(e.listedOnly(rows))
	}
	return nil
}

func describeWhere(w string) string {
	if len(w) > 60 {
		return strconv.Quote(w[:57] + "…")
	}
	return strconv.Quote(w)
}
